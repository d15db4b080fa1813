"""What a slash command does: the command tree, /forget-me, /memory, people and settings, and their
pagination and views.
"""
