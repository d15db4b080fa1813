"""How a person or a message leaves the memory: erasure, its reach into mentions and the bot's
words, reconciliation of edits.
"""
