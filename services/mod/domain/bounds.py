"""How much a layer's mods may add to what everyone it reaches reads (ours: the HIP sets no
bound). The surface is answered whole, as one message on the bus: to every member of an
org for the org's mods, and to a person for their own. So an install is refused that would
take its layer past its share of that message, and hanzo's, the org's and a person's mods
together always make a surface the bus carries.

A manifest's surface is not its size: a command of a few bytes is an entry with its full
id, layer and ops, some four times as long. So the share is measured on the entries the
layer's mods draw, as the surface answers them.
"""

from collections.abc import Sequence

from libs.contracts import codec
from libs.contracts.mod import LayerName, Manifest
from libs.contracts.problem import Refused
from services.mod.domain import surface
from services.mod.domain.manifests import mod_id

__all__ = ["INSTALLS_MOST", "admit", "share"]

INSTALLS_MOST = 100  # a layer's mods: each is read for every surface drawn from the layer
# The org's mods reach everyone in it and take half the message, a person's a quarter; the
# last quarter holds hanzo's mods (about 11 KB) and the answer's other fields.
_SHARE: dict[str, int] = {"org": 2, "user": 4}


def share(layer: LayerName, max_payload: int) -> int:
    """The bytes of surface a layer's mods may draw, on a bus carrying `max_payload`."""
    return max_payload // _SHARE[layer]


def admit(layer: LayerName, mods: Sequence[Manifest], manifest: Manifest, max_payload: int) -> None:
    """Refused if the layer, holding `mods`, cannot take `manifest` as well. A mod installed
    again replaces itself."""
    others = [m for m in mods if mod_id(m) != mod_id(manifest)]
    if len(others) >= INSTALLS_MOST:
        raise Refused(
            "installs-full",
            409,
            f"the {layer} layer holds {INSTALLS_MOST} mods, the most it may; uninstall one first",
        )
    drawn = len(codec.encode(surface.entries([(m, layer) for m in (*others, manifest)])))
    if drawn > (most := share(layer, max_payload)):
        raise Refused(
            "surface-full",
            409,
            f"with {mod_id(manifest)} the {layer} layer's mods would draw {drawn:,} bytes of "
            f"surface; they may draw {most:,}",
        )
