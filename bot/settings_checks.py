"""Checks of single setting values that need more than a type (used by bot.settings).

Each returns one sentence naming what is wrong, or None; the value itself never appears in
the sentence, since a DATABASE_URL carries a password.
"""

from __future__ import annotations

import os
from pathlib import Path

from bot.core.prompts import read_persona
from memory import url_problem
from memory.file_limits import FileTooLarge


def database_url_problem(url: str) -> str | None:
    """None for an empty value (the embedded server is used) or a PostgreSQL URL naming a host
    or a socket folder, and a database."""
    return url_problem(url)


def persona_problem(persona_file: Path | None) -> str | None:
    """None when the persona file the bot will read (PERSONA_FILE, or the built-in one) reads
    as UTF-8 text; else why not. Checked before connecting: the reply cog reads it only once
    logged in, so a typo would otherwise surface after Discord login."""
    if persona_file is None:
        return None
    try:
        text = read_persona(persona_file)
    except FileTooLarge as exc:
        return str(exc)
    except FileNotFoundError:
        return f"PERSONA_FILE {persona_file} does not exist (mount it into the container, or unset it)"
    except IsADirectoryError:
        return f"PERSONA_FILE {persona_file} is a folder, not a text file"
    except PermissionError:
        return f"PERSONA_FILE {persona_file} is not readable by this user"
    except UnicodeDecodeError:
        return f"PERSONA_FILE {persona_file} is not UTF-8 text"
    except OSError as exc:
        return f"PERSONA_FILE {persona_file} cannot be read ({type(exc).__name__})"
    if not text.strip():
        return f"PERSONA_FILE {persona_file} is empty"
    return None


def folder_problem(name: str, folder: Path) -> str | None:
    """None when ``folder`` is a folder this user may write in, or could be created by it;
    else one sentence naming the setting and the path (a path holds no secret)."""
    if folder.exists():
        if not folder.is_dir():
            return f"{name} {folder} is a file, not a folder (point {name} at a folder)"
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"{name} {folder} is not writable by this user"
        return None
    parent = folder.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{name} {folder} cannot be created: {parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{name} {folder} cannot be created: {parent} is not writable by this user"
    return None


def path_problems(data_dir: Path | None, health_file: Path | None) -> list[str]:
    """The path settings a command would trip over, each named with its path: DATA_DIR (pass
    None when a DATABASE_URL is set: then nothing lives there), and the folder of HEALTH_FILE."""
    problems = []
    if data_dir is not None:
        problem = folder_problem("DATA_DIR", data_dir)
        if problem is not None:
            problems.append(problem)
    if health_file is not None:
        problem = folder_problem("the folder of HEALTH_FILE", health_file.parent)
        if problem is not None:
            problems.append(problem)
    return problems
