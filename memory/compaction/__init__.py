"""How summary lines are built and paid for: the compactor, its planner and call plan, the
summarizers and their prompts.
"""
