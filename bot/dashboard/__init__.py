"""The web dashboard: a server's memory, money and health on a page (bot/dashboard/web.py)."""
