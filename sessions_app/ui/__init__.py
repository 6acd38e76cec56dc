"""The transcript browser: server-rendered pages for people (login with Django auth).

views.py parses and renders; queries.py reads (sessions_app functions only); present.py turns
rows and projected messages into what the templates show; search.py is the list's text search.
"""
