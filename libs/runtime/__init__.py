"""The small runtime every service uses: connect, ensure, serve, health, metrics, logs, drain."""
