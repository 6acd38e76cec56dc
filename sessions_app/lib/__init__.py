"""Primitives with no app imports: argument reading, JSON encoding and depth, plain SQL,
bounding text for tool output, inline charts, the outbound request policy."""
