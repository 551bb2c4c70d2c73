"""The client's operations (elma_client.operations) against the OpenAPI document the started ELMA serves: every
path and method it calls exists and answers with the status it expects, every query parameter and body field it
sends is accepted, and every field its answer types name is documented (required where the client relies on it)."""

import json
import typing
import urllib.request
from typing import Any, Dict, List, Set

import pytest

from elma_client import operations
from elma_client.operations import Operation

PROBLEM_FIELDS = ("status", "code", "title", "detail", "requestId")


@pytest.fixture(scope="module")
def document(elma_server) -> Dict[str, Any]:
    with urllib.request.urlopen(f"{elma_server.url}/docs/openapi.json", timeout=30) as response:
        return json.load(response)


def resolve(document: Dict[str, Any], schema: Dict[str, Any]) -> Dict[str, Any]:
    while "$ref" in schema:
        node: Any = document
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def variants(document: Dict[str, Any], schema: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The object schemas a value may match: the branches of anyOf/oneOf, allOf merged."""
    schema = resolve(document, schema)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [v for branch in schema[key] for v in variants(document, branch)]
    if "allOf" in schema:
        merged: Dict[str, Any] = {"properties": {}, "required": []}
        for part in schema["allOf"]:
            for v in variants(document, part):
                merged["properties"].update(v.get("properties", {}))
                merged["required"] += v.get("required", [])
        return [merged]
    return [schema]


def check_shape(document: Dict[str, Any], shape: Any, schema: Dict[str, Any], where: str, sent: bool) -> List[str]:
    """Mismatches between a TypedDict (or a type inside one) and a schema. For a body the client sends (``sent``),
    every key must be a documented property and every documented required field a key the client always sends; for
    an answer, every key must be documented, and every key the client always reads must be required."""
    origin = typing.get_origin(shape)
    if origin is typing.Union:
        shapes = [a for a in typing.get_args(shape) if a is not type(None)]
        return [p for s in shapes for p in check_shape(document, s, schema, where, sent)]
    if origin is list:
        options = [v for v in variants(document, schema) if "items" in v]
        if not options:
            return [f"{where}: the document has no array here"]
        return check_shape(document, typing.get_args(shape)[0], options[0]["items"], f"{where}[]", sent)
    if origin is typing.Literal:
        enums = [v["enum"] for v in variants(document, schema) if "enum" in v]
        values = set(typing.get_args(shape))
        if enums and not values <= {e for enum in enums for e in enum}:
            return [f"{where}: {sorted(values - {e for enum in enums for e in enum})} not among the documented values"]
        return []
    if not (isinstance(shape, type) and issubclass(shape, dict) and hasattr(shape, "__required_keys__")):
        return []  # a scalar, Any or a plain dict: nothing to compare
    options = [v for v in variants(document, schema) if "properties" in v]
    if not options:
        return [f"{where}: the document has no object here"]
    properties: Dict[str, Any] = {}
    required: Set[str] = set()
    for option in options:
        properties.update(option["properties"])
        required |= set(option.get("required", []))
    hints = typing.get_type_hints(shape)
    problems = [f"{where}.{key}: not in the document" for key in hints if key not in properties]
    if sent and len(options) == 1:
        problems += [f"{where}.{key}: required by the document, optional in the client" for key in required - shape.__required_keys__]
    elif not sent:
        problems += [f"{where}.{key}: read as always present, optional in the document" for key in shape.__required_keys__ - required]
    for key, hint in hints.items():
        if key in properties:
            problems += check_shape(document, hint, properties[key], f"{where}.{key}", sent)
    return problems


def served(document: Dict[str, Any], op: Operation) -> Dict[str, Any]:
    operation = document["paths"].get(op.path, {}).get(op.method.lower())
    if operation is None:
        pytest.fail(f"{op.method} {op.path} is not in the OpenAPI document")
    return operation


@pytest.mark.parametrize("name", sorted(operations.ALL))
def test_the_operation_is_served_as_the_client_calls_it(document: Dict[str, Any], name: str) -> None:
    op = operations.ALL[name]
    operation = served(document, op)
    responses = operation["responses"]
    assert str(op.status) in responses, f"{op.method} {op.path} does not document {op.status}"

    declared = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
    assert set(op.query) <= declared, f"query parameters {sorted(set(op.query) - declared)} are not documented"
    if "{id}" in op.path:
        assert any(p["name"] == "id" and p["in"] == "path" for p in operation.get("parameters", []))

    problems: List[str] = []
    if op.body is not None:
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        assert body is not None, f"{op.method} {op.path} documents no JSON body"
        problems += check_shape(document, op.body, body["schema"], "body", sent=True)
    content = responses[str(op.status)].get("content", {})
    assert op.accept in content, f"{op.method} {op.path} answers {sorted(content)}, not {op.accept}"
    if op.response is not None:
        problems += check_shape(document, op.response, content[op.accept]["schema"], "answer", sent=False)
    assert problems == []


@pytest.mark.parametrize("name", sorted(operations.ALL))
def test_every_documented_error_carries_the_fields_elma_error_reads(document: Dict[str, Any], name: str) -> None:
    operation = served(document, operations.ALL[name])
    errors = {status: r for status, r in operation["responses"].items() if status[0] in "45"}
    assert "401" in errors
    if "{id}" in operations.ALL[name].path:
        assert "404" in errors
    for status, response in errors.items():
        schema = resolve(document, response["content"]["application/problem+json"]["schema"])
        assert set(PROBLEM_FIELDS) <= set(schema["properties"]), status
        assert {"status", "code", "title", "detail"} <= set(schema["required"]), status
