"""A service's settings come from its environment, each unset one at its documented default."""

from libs.runtime.settings import Settings


def test_the_environment_sets_what_it_names_and_the_rest_keep_their_defaults():
    settings = Settings.from_env("rooms", {"TETHER_PULL_WAIT": "0.2", "TETHER_JS_REPLICAS": "3"})
    assert (settings.pull_wait, settings.js_replicas) == (0.2, 3)
    defaults = (settings.nats_user, settings.max_in_flight, settings.metrics_port)
    assert defaults == ("rooms", 256, 9100)
    assert Settings.from_env("rooms", {}).pull_wait == 0.5
