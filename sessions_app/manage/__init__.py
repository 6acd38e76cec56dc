"""Management operations: sessions (patch, archive, reset, delete, groups), agents, gateway
settings, the model catalog and the send policy's API."""
