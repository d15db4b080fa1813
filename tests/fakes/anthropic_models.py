"""The Models API of the Anthropic fake: ``GET /v1/models`` and ``GET /v1/models/{model_id}``.

As the real API: both need a valid key (401 authentication_error otherwise); retrieving accepts
a model id or an alias and answers with the full id (``claude-haiku-4-5`` ->
``claude-haiku-4-5-20251001``); an unknown id is 404 not_found_error; the list is newest
first, paged with ``limit`` (1-1000, default 20), ``after_id`` and ``before_id``, and shows
``active`` and ``deprecated`` models unless ``lifecycle`` asks for others. Models and dates from
the pricing reference the project keeps (Haiku 4.5 2025-10-01, Sonnet 4.5 2025-09-29, Sonnet 4.6,
Haiku 5.5 and Sonnet 5.5 2026-10-07).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CatalogueModel:
    id: str
    display_name: str
    created_at: str
    aliases: tuple[str, ...] = ()
    lifecycle: str = "active"  # "active" | "deprecated" | "retired"

    def info(self) -> dict[str, Any]:
        return {
            "type": "model",
            "id": self.id,
            "display_name": self.display_name,
            "created_at": self.created_at,
            "lifecycle": self.lifecycle,
            "deprecated_at": None if self.lifecycle == "active" else "2026-11-01T00:00:00Z",
            "retires_at": None,
        }


DEFAULT_CATALOGUE = (
    CatalogueModel("claude-sonnet-5-5", "Claude Sonnet 5.5", "2026-10-07T00:00:00Z"),
    CatalogueModel("claude-haiku-5-5", "Claude Haiku 5.5", "2026-10-07T00:00:00Z"),
    CatalogueModel("claude-sonnet-4-6", "Claude Sonnet 4.6", "2026-02-17T00:00:00Z"),
    CatalogueModel(
        "claude-haiku-4-5-20251001", "Claude Haiku 4.5", "2025-10-01T00:00:00Z", ("claude-haiku-4-5",)
    ),
    CatalogueModel(
        "claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "2025-09-29T00:00:00Z", ("claude-sonnet-4-5",)
    ),
)


class ModelNotFound(Exception):
    pass


class BadListQuery(Exception):
    pass


class ModelCatalogue:
    """What the fake's Models API knows; tests add, retire or remove models."""

    def __init__(self, models: tuple[CatalogueModel, ...] = DEFAULT_CATALOGUE) -> None:
        self.models: list[CatalogueModel] = list(models)

    def add(self, model: CatalogueModel) -> None:
        self.models = [m for m in self.models if m.id != model.id]
        self.models.append(model)

    def set_lifecycle(self, model_id: str, lifecycle: str) -> None:
        found = self.find(model_id)
        self.add(CatalogueModel(found.id, found.display_name, found.created_at, found.aliases, lifecycle))

    def find(self, model_id: str) -> CatalogueModel:
        for model in self.models:
            if model_id == model.id or model_id in model.aliases:
                return model
        raise ModelNotFound(f"model: {model_id}")

    def page(self, query: dict[str, str], lifecycles: list[str]) -> dict[str, Any]:
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            raise BadListQuery("limit: Input should be a valid integer") from None
        if not 1 <= limit <= 1000:
            raise BadListQuery("limit: Input should be between 1 and 1000")
        wanted = lifecycles or ["active", "deprecated"]
        listed = sorted(
            (m for m in self.models if m.lifecycle in wanted), key=lambda m: m.created_at, reverse=True
        )
        ids = [m.id for m in listed]
        if "after_id" in query:
            start = ids.index(query["after_id"]) + 1 if query["after_id"] in ids else len(ids)
            listed = listed[start:]
        elif "before_id" in query:
            end = ids.index(query["before_id"]) if query["before_id"] in ids else 0
            listed = listed[max(0, end - limit) : end]
        shown = listed[:limit]
        return {
            "data": [m.info() for m in shown],
            "has_more": len(listed) > limit,
            "first_id": shown[0].id if shown else None,
            "last_id": shown[-1].id if shown else None,
        }
