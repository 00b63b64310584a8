from research_mcp.core.contracts import Budget, ExtractorTaskSpec
from research_mcp.server.schemas import compact_schema


def test_a_compacted_schema_keeps_fields_and_constraints_without_titles_and_spells_null_as_a_type() -> None:
    schema = compact_schema(ExtractorTaskSpec.model_json_schema())
    assert "$defs" not in str(schema) and "'title'" not in str(schema)
    assert schema["required"] == ["questions"]
    assert schema["properties"]["priority"] == {
        "default": 3,
        "description": "1 highest.",
        "maximum": 5,
        "minimum": 1,
        "type": "integer",
    }
    # A budget's bounds are enforced, not published (docs/tools.md, "Input limits"): the schema stays small.
    assert schema["properties"]["budget"]["properties"]["max_tokens"] == {
        "description": "Tokens.",
        "type": ["integer", "null"],
    }
    assert schema["properties"]["budget"]["additionalProperties"] is False


def test_a_property_named_title_is_kept() -> None:
    from research_mcp.core.contracts import PlanNode

    schema = compact_schema(PlanNode.model_json_schema())
    assert "title" in schema["properties"]
    assert compact_schema(Budget.model_json_schema())["type"] == "object"
