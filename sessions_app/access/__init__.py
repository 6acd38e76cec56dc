"""Who is calling and what they may reach: API keys to requesters, visibility, resolving a
session reference, the site's login sessions and login throttling."""
