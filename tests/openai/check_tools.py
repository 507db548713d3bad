"""Checks tool definitions against the `openai` Python SDK's own types; prints one JSON
object per definition: {"name", "ok", "problems": [...]}.

usage: check_tools.py FORMAT STRICT < definitions.json
FORMAT: responses (Responses API function tools) or openai (Chat Completions tools).
STRICT: 1 when the parameters must already be in strict form: the SDK's own strict
conversion (what `openai.pydantic_function_tool` applies) must leave them unchanged.
"""
import copy
import json
import sys

from pydantic import TypeAdapter
from openai.lib._pydantic import _ensure_strict_json_schema
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionTool, FunctionToolParam
from openai.types.shared_params import FunctionDefinition


def check(definition, fmt, strict):
    problems = []
    if fmt == "responses":
        extra = set(definition) - set(FunctionToolParam.__annotations__)
        if extra:
            problems.append(f"keys FunctionToolParam does not have: {sorted(extra)}")
        TypeAdapter(FunctionToolParam).validate_python(definition)
        tool = FunctionTool.model_validate(definition)
        name, parameters, strict_flag = tool.name, definition["parameters"], tool.strict
    else:
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(definition)
        function = definition["function"]
        extra = set(function) - set(FunctionDefinition.__annotations__)
        if extra:
            problems.append(f"keys FunctionDefinition does not have: {sorted(extra)}")
        name, parameters, strict_flag = function["name"], function.get("parameters"), function.get("strict")
    if strict:
        if strict_flag is not True:
            problems.append(f"strict is {strict_flag!r}, not true")
        converted = copy.deepcopy(parameters)
        _ensure_strict_json_schema(converted, path=(), root=converted)
        if converted != parameters:
            problems.append(
                "the SDK's strict conversion changes the parameters: "
                + json.dumps({"ours": parameters, "sdk": converted}, sort_keys=True)
            )
    return name, problems


def main():
    fmt, strict = sys.argv[1], sys.argv[2] == "1"
    for definition in json.load(sys.stdin):
        try:
            name, problems = check(definition, fmt, strict)
        except Exception as error:  # a validation error names the field
            name, problems = definition.get("name"), [f"{type(error).__name__}: {error}"]
        print(json.dumps({"name": name, "ok": not problems, "problems": problems}), flush=True)


main()
