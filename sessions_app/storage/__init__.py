"""A transcript's storage lifecycle: cold storage, retention and the disk budget, importing from
and exporting to an OpenClaw state dir."""
