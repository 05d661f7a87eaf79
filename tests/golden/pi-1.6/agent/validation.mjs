// Records how pi 1.6 validates tool arguments: pi-ai 1.6.0's validateToolArguments (pi-schema
// 1.6.0 compiled with coerce, formats and unresolvedRefs "reject") on a set of schemas and
// arguments, valid and invalid.
//
//   cd tests/golden/pi-1.6/agent && npm ci && node_modules/.bin/node validation.mjs
//
// writes validation-cases.jsonl: one line per case with the tool's schema, the arguments, and
// either the coerced arguments pi hands the tool (`ok: true, value`) or the error text the model
// reads (`ok: false, error`). tests/agent/test_validation_pi16.py replays every line.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { validateToolArguments } from "@earendil-works/pi-ai";

const HERE = dirname(fileURLToPath(import.meta.url));

const obj = (properties, required = Object.keys(properties), extra = {}) => ({
  type: "object",
  properties,
  required,
  ...extra,
});

// Schemas as pydantic emits them for notebook functions (pi_notebook's tools come from there).
const PYDANTIC_OPTIONAL = obj(
  { path: { type: "string", title: "Path" }, limit: { anyOf: [{ type: "integer" }, { type: "null" }], default: null, title: "Limit" } },
  ["path"],
);
const PYDANTIC_REFS = {
  $defs: {
    Point: obj({ x: { type: "number", title: "X" }, y: { type: "number", title: "Y" } }, ["x", "y"], { title: "Point" }),
    Color: { enum: ["red", "green"], title: "Color", type: "string" },
  },
  ...obj({ at: { $ref: "#/$defs/Point" }, color: { $ref: "#/$defs/Color" } }, ["at", "color"]),
};
const SHAPES = {
  anyOf: [
    obj({ kind: { const: "circle" }, r: { type: "number", minimum: 0 } }, ["kind", "r"]),
    obj({ kind: { const: "square" }, side: { type: "number", minimum: 0 } }, ["kind", "side"]),
  ],
};

// [name, schema, arguments]
const CASES = [
  // missing and wrong types
  ["missing-one", obj({ text: { type: "string" } }), {}],
  ["missing-two", obj({ a: { type: "string" }, b: { type: "integer" } }), {}],
  ["missing-and-wrong", obj({ a: { type: "string" }, b: { type: "integer" } }), { b: "many" }],
  ["type-string-got-object", obj({ text: { type: "string" } }), { text: { a: 1 } }],
  ["type-integer-got-string", obj({ n: { type: "integer" } }), { n: "ten" }],
  ["type-integer-got-float", obj({ n: { type: "integer" } }), { n: 2.5 }],
  ["type-number-got-array", obj({ x: { type: "number" } }), { x: [1, 2] }],
  ["type-boolean-got-string", obj({ flag: { type: "boolean" } }), { flag: "yes" }],
  ["type-object-got-string", obj({ opts: obj({ a: { type: "string" } }) }), { opts: "a" }],
  ["type-array-got-object", obj({ tags: { type: "array", items: { type: "string" } } }), { tags: { a: 1 } }],
  ["type-list", obj({ v: { type: ["string", "number"] } }), { v: { a: 1 } }],
  ["type-null-got-object", obj({ v: { type: "null" } }), { v: {} }],
  ["root-not-object", { type: "object", properties: {} }, []],
  // numbers
  ["minimum", obj({ n: { type: "integer", minimum: 1 } }), { n: 0 }],
  ["maximum", obj({ n: { type: "integer", maximum: 10 } }), { n: 11 }],
  ["exclusive-minimum", obj({ x: { type: "number", exclusiveMinimum: 0 } }), { x: 0 }],
  ["exclusive-maximum", obj({ x: { type: "number", exclusiveMaximum: 1.5 } }), { x: 2 }],
  ["minimum-float", obj({ x: { type: "number", minimum: 0.25 } }), { x: 0.125 }],
  ["multiple-of", obj({ n: { type: "integer", multipleOf: 5 } }), { n: 12 }],
  ["range-both", obj({ n: { type: "integer", minimum: 1, maximum: 3 } }), { n: 7 }],
  // strings
  ["min-length", obj({ s: { type: "string", minLength: 3 } }), { s: "ab" }],
  ["max-length", obj({ s: { type: "string", maxLength: 2 } }), { s: "abc" }],
  ["max-length-emoji", obj({ s: { type: "string", maxLength: 2 } }), { s: "😀😀" }],
  ["pattern", obj({ id: { type: "string", pattern: "^[a-z]+-\\d+$" } }), { id: "ABC" }],
  ["pattern-and-length", obj({ id: { type: "string", pattern: "^\\d+$", minLength: 4 } }), { id: "ab" }],
  ["format-email", obj({ to: { type: "string", format: "email" } }), { to: "not an address" }],
  ["format-date-time", obj({ at: { type: "string", format: "date-time" } }), { at: "yesterday" }],
  ["format-unknown", obj({ at: { type: "string", format: "colour" } }), { at: "x" }],
  // enum and const
  ["enum", obj({ mode: { type: "string", enum: ["read", "write"] } }), { mode: "delete" }],
  ["enum-no-type", obj({ mode: { enum: ["a", 1, null] } }), { mode: "b" }],
  ["const", obj({ v: { const: "fixed" } }), { v: "other" }],
  // arrays
  ["items-wrong", obj({ tags: { type: "array", items: { type: "string" } } }), { tags: ["a", {}, "c", []] }],
  ["min-items", obj({ xs: { type: "array", items: { type: "integer" }, minItems: 2 } }), { xs: [1] }],
  ["max-items", obj({ xs: { type: "array", items: { type: "integer" }, maxItems: 1 } }), { xs: [1, 2] }],
  ["unique-items", obj({ xs: { type: "array", items: { type: "integer" }, uniqueItems: true } }), { xs: [1, 1] }],
  ["tuple", obj({ pair: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false } }), { pair: ["a", "b", 3] }],
  ["contains", obj({ xs: { type: "array", contains: { type: "string" } } }), { xs: [1, 2] }],
  // nested objects and arrays
  ["nested-object", obj({ opts: obj({ depth: { type: "integer", minimum: 0 }, name: { type: "string" } }) }), { opts: { depth: -1 } }],
  ["nested-array-of-objects", obj({ edits: { type: "array", items: obj({ oldText: { type: "string" }, newText: { type: "string" } }) } }), { edits: [{ oldText: "a", newText: "b" }, { oldText: "c" }, { newText: 3 }] }],
  ["nested-array-of-arrays", obj({ grid: { type: "array", items: { type: "array", items: { type: "integer", minimum: 0 } } } }), { grid: [[0, 1], [2, -3], [{}]] }],
  // additional properties
  ["additional-false", obj({ a: { type: "string" } }, ["a"], { additionalProperties: false }), { a: "x", b: 1, c: 2 }],
  ["additional-schema", obj({ a: { type: "string" } }, ["a"], { additionalProperties: { type: "integer" } }), { a: "x", b: 1, c: {} }],
  ["pattern-properties", { type: "object", patternProperties: { "^x-": { type: "integer" } }, additionalProperties: false }, { "x-a": {}, y: 1 }],
  ["min-properties", { type: "object", minProperties: 2 }, { a: 1 }],
  ["key-escaping", obj({ "a/b": { type: "integer" }, "c~d": { type: "integer" } }), { "a/b": {}, "c~d": {} }],
  ["property-names", { type: "object", propertyNames: { pattern: "^[a-z]+$" } }, { ok: 1, Bad: 2 }],
  ["dependent-required", { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, dependentRequired: { a: ["b"] } }, { a: "x" }],
  // unions
  ["any-of-primitives", obj({ v: { anyOf: [{ type: "string" }, { type: "integer" }] } }), { v: {} }],
  ["any-of-objects", obj({ v: { anyOf: [obj({ a: { type: "string" } }), obj({ b: { type: "integer" }, c: { type: "integer" } })] } }), { v: { b: 1, c: "x" } }],
  ["tagged-union-bad-tag", obj({ shape: SHAPES }), { shape: { kind: "triangle" } }],
  ["tagged-union-bad-branch", obj({ shape: SHAPES }), { shape: { kind: "square", side: -1 } }],
  ["one-of-both", obj({ v: { oneOf: [{ type: "integer" }, { type: "number" }] } }), { v: 3 }],
  ["one-of-none", obj({ v: { oneOf: [{ type: "integer" }, { type: "boolean" }] } }), { v: {} }],
  ["not", obj({ v: { not: { type: "string" } } }), { v: "s" }],
  ["all-of", obj({ v: { allOf: [{ type: "integer" }, { minimum: 5 }, { maximum: 1 }] } }), { v: 3 }],
  ["if-then", { type: "object", if: obj({ kind: { const: "file" } }, ["kind"]), then: obj({ path: { type: "string" } }, ["path"]) }, { kind: "file" }],
  ["false-property", obj({ a: false }, []), { a: 1 }],
  // references (pydantic)
  ["ref-nested", PYDANTIC_REFS, { at: { x: 1 }, color: "blue" }],
  ["ref-unresolved", obj({ v: { $ref: "#/$defs/Missing" } }), { v: 1 }],
  ["optional-wrong", PYDANTIC_OPTIONAL, { path: "a", limit: "many" }],
  ["many-errors", obj(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`p${i}`, { type: "integer" }]))), {}],
  // coercion: what the tool receives
  ["coerce-number-string", obj({ n: { type: "integer" }, x: { type: "number" } }), { n: "42", x: "2.5" }],
  ["coerce-integer-truncates", obj({ n: { type: "integer" } }), { n: "3.5" }],
  ["coerce-integer-float", obj({ n: { type: "integer" } }), { n: 3.5 }],
  ["coerce-empty-string-number", obj({ n: { type: "number" } }), { n: "" }],
  ["coerce-string-from-number", obj({ s: { type: "string" }, t: { type: "string" } }), { s: 5, t: true }],
  ["coerce-null-string", obj({ s: { type: "string" } }), { s: null }],
  ["coerce-boolean", obj({ a: { type: "boolean" }, b: { type: "boolean" }, c: { type: "boolean" }, d: { type: "boolean" } }), { a: "true", b: "False", c: 0, d: "1" }],
  ["coerce-single-to-array", obj({ tags: { type: "array", items: { type: "string" } } }), { tags: "one" }],
  ["coerce-array-items", obj({ ns: { type: "array", items: { type: "integer" } } }), { ns: ["1", 2, "3"] }],
  ["coerce-optional-null-dropped", obj({ a: { type: "string" }, b: { type: "integer" } }, ["a"]), { a: "x", b: null }],
  ["coerce-optional-null-kept", PYDANTIC_OPTIONAL, { path: "a", limit: null }],
  ["coerce-optional-int", PYDANTIC_OPTIONAL, { path: "a", limit: "5" }],
  ["coerce-type-list-null", obj({ v: { type: ["integer", "null"] } }), { v: "" }],
  ["coerce-enum", obj({ n: { enum: [1, 2, 3] } }), { n: "2" }],
  ["coerce-union-order", obj({ v: { anyOf: [{ type: "boolean" }, { type: "integer" }] } }), { v: "1" }],
  ["coerce-ref", PYDANTIC_REFS, { at: { x: "1", y: "2" }, color: "red" }],
  ["coerce-fails-still", obj({ n: { type: "integer", minimum: 1 } }), { n: "0" }],
  ["valid-unchanged", obj({ text: { type: "string" }, n: { type: "integer" } }, ["text"]), { text: "hi", n: 3, extra: [1] }],
];

// The cases tests/agent/test_validation.py checked against pi 0.73's wording, now decided by pi
// 1.6: schemas at the root (any JSON value), pydantic's schema of a drawing, ids and anchors.
const DRAWING = {"$defs": {"Color": {"enum": ["red", "green"], "title": "Color", "type": "string"}, "Point": {"properties": {"x": {"title": "X", "type": "integer"}, "y": {"default": 0, "title": "Y", "type": "integer"}}, "required": ["x"], "title": "Point", "type": "object"}, "Tree": {"properties": {"value": {"title": "Value", "type": "integer"}, "children": {"default": [], "items": {"$ref": "#/$defs/Tree"}, "title": "Children", "type": "array"}}, "required": ["value"], "title": "Tree", "type": "object"}}, "properties": {"color": {"$ref": "#/$defs/Color"}, "origin": {"$ref": "#/$defs/Point", "description": "where to start"}, "points": {"default": [], "items": {"$ref": "#/$defs/Point"}, "title": "Points", "type": "array"}, "tree": {"anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}], "default": null}, "mode": {"default": "fill", "enum": ["fill", "stroke"], "title": "Mode", "type": "string"}, "scale": {"default": 1.0, "exclusiveMinimum": 0, "title": "Scale", "type": "number"}, "tags": {"default": [], "items": {"type": "string"}, "title": "Tags", "type": "array", "uniqueItems": true}, "meta": {"additionalProperties": {"type": "integer"}, "default": {}, "title": "Meta", "type": "object"}}, "required": ["color", "origin"], "title": "Drawing", "type": "object"};
const ROOT = [
  ["root-coerce-number", { type: "number" }, ["2.5", " 12 ", "1e3", "0x10", null, true, "", "abc", "Infinity"]],
  ["root-coerce-integer", { type: "integer" }, ["7", "7.5", 7.0, null, -2.5]],
  ["root-coerce-string", { type: "string" }, [42, 2.5, 3.0, true, null, [1]]],
  ["root-coerce-boolean", { type: "boolean" }, ["true", "false", 1, 0, null, "yes", 2, "TRUE", "0"]],
  ["root-coerce-null", { type: "null" }, ["", 0, false, "x", "null", "0"]],
  ["root-coerce-type-list", { type: ["integer", "null"] }, [null, "3", ""]],
  ["root-coerce-type-list-2", { type: ["string", "number"] }, [5, true, null]],
  ["root-coerce-type-list-3", { type: ["number", "string"] }, [true]],
  ["root-coerce-items", { type: "array", items: { type: "integer" } }, [["1", 2, "3"], "4"]],
  ["root-coerce-tuple", { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }] }, [[1, "2", "x"], "a"]],
  ["root-coerce-additional", { type: "object", additionalProperties: { type: "number" } }, [{ a: "1", b: "2.5" }]],
  ["root-coerce-all-of", { allOf: [obj({ a: { type: "integer" } }, []), obj({ b: { type: "string" } }, [])] }, [{ a: "1", b: 2 }]],
  ["root-union-optional", obj({ n: { anyOf: [{ type: "integer" }, { type: "null" }] } }, []), [{ n: null }, { n: "5" }, { n: 5 }]],
  ["root-union-one-of", { oneOf: [{ type: "boolean" }, { type: "string" }] }, ["true", 1, {}]],
  ["root-union-single", { anyOf: [{ type: "integer" }] }, ["x"]],
  ["root-type", { type: "string" }, [{}]],
  ["root-type-list", { type: ["string", "null"] }, [{}]],
  ["root-required", obj({ a: { type: "integer" } }, ["a", "b"]), [{}]],
  ["root-bounds", { type: "number", minimum: 1, maximum: 2.5 }, [0, 3]],
  ["root-exclusive", { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 10.0 }, [0, 10]],
  ["root-draft4-exclusive", { type: "number", minimum: 0, exclusiveMinimum: true }, [0, -1]],
  ["root-multiple-of", { type: "number", multipleOf: 0.5 }, [0.75, 1.5]],
  ["root-multiple-of-float", { multipleOf: 0.1 }, [0.3]],
  ["root-strings", { type: "string", minLength: 2, maxLength: 3, pattern: "^a+$" }, ["b", "abcd"]],
  ["root-arrays", { type: "array", minItems: 1, maxItems: 2, uniqueItems: true }, [[], [1, 1.0], [1, 2, 3]]],
  ["root-enum-const-not", { anyOf: [{ enum: ["a", "b"] }] }, ["c"]],
  ["root-const", { const: 1 }, [true]],
  ["root-not", { not: { type: "string" } }, ["x"]],
  ["root-any-of-report", { anyOf: [{ type: "integer" }, { type: "null" }] }, [{}]],
  ["root-one-of-both", { oneOf: [{ type: "number" }, { type: "integer" }] }, [1]],
  ["root-all-of", { allOf: [{ type: "number" }, { minimum: 5 }] }, ["7x", [1]]],
  ["root-additional-false", { type: "object", properties: { a: {} }, additionalProperties: false }, [{ a: 1, "x/y": 2 }]],
  ["root-pattern-properties", { type: "object", patternProperties: { "^n_": { type: "integer" } } }, [{ n_a: "x", other: "x" }, { n_b: {} }]],
  ["root-draft7-items", { type: "array", items: [{ type: "string" }], additionalItems: false }, [["a", 1]]],
  ["root-contains", { type: "array", contains: { type: "string" }, minContains: 2, maxContains: 3 }, [[1, "a"]]],
  ["root-dependent-required", { type: "object", dependentRequired: { a: ["b", "c"] } }, [{ a: 1 }]],
  ["root-if-then", { if: { type: "string" }, then: { minLength: 2 } }, ["a"]],
  ["root-unevaluated", { type: "object", properties: { a: {} }, unevaluatedProperties: false }, [{ a: 1, b: 2 }]],
  ["root-false-under", { type: "object", properties: { a: false, b: { type: "array", items: false } } }, [{ a: 1, b: [1] }]],
  ["root-keyword-order", { properties: { a: { minimum: 1, type: "integer" } }, required: ["b"], type: "object" }, [{ a: 0 }, []]],
  ["root-nested-required", obj({ models: { type: "array", items: obj({ id: { type: "string" }, cost: obj({}, ["input", "output"]) }, ["id"]) } }, []), [{ models: [{ cost: {} }, { id: "m", cost: { input: 1 } }] }]],
  ["root-many-items", { type: "array", items: { type: "string" } }, [Array.from({ length: 12 }, () => ({}))]],
  ["root-unknown-keyword", { type: "string", "x-custom": 1 }, ["x"]],
  ["root-named-group", { pattern: "^(?<y>\\d{4})$" }, ["2024", "24"]],
  ["root-malformed-limits", { type: "string", minLength: "2", maxItems: null, multipleOf: 0 }, ["a"]],
  ["root-ids-anchors", { $id: "https://example.com/root.json", type: "object", properties: { a: { $ref: "#num" }, b: { $ref: "item.json" } }, $defs: { n: { $anchor: "num", type: "integer" }, item: { $id: "item.json", type: "string" } } }, [{ a: "3", b: 4 }, { a: "x", b: {} }]],
  ["root-remote-ref", obj({ a: { $ref: "https://example.com/other.json" } }, []), [{ a: 1 }, {}]],
  ["root-definitions", { type: "object", properties: { p: { $ref: "#/definitions/P" }, q: { anyOf: [{ $ref: "#/definitions/P" }, { type: "null" }] } }, definitions: { P: { type: "object", properties: { v: { type: "number" } } } } }, [{ p: { v: "1" }, q: null }, { q: { v: "2" } }]],
  ["pydantic-drawing", DRAWING, [
    { color: "red", origin: { x: "1", y: 2.0 }, points: [{ x: "3" }, { x: 4, y: "5" }], tree: { value: "1", children: [{ value: "2", children: [{ value: 3.0 }] }] }, scale: "2", meta: { a: "1" } },
    { color: "blue", origin: {}, mode: "dotted", scale: 0, tags: ["a", "a"], tree: { value: 1, children: [{ value: "x" }] } },
    { color: "green", origin: { x: 1 }, tree: null, tags: "solo" },
  ]],
];
for (const [name, schema, values] of ROOT) {
  values.forEach((value, index) => CASES.push([`${name}-${index}`, schema, value]));
}

const rows = CASES.map(([name, schema, args]) => {
  const tool = { name: "tool", description: "", parameters: schema };
  const toolCall = { type: "toolCall", id: "call_1", name: "tool", arguments: args };
  try {
    const value = validateToolArguments(tool, toolCall);
    return { case: name, schema, arguments: args, ok: true, value };
  } catch (error) {
    return { case: name, schema, arguments: args, ok: false, error: error.message };
  }
});
writeFileSync(join(HERE, "validation-cases.jsonl"), rows.map((row) => `${JSON.stringify(row)}\n`).join(""));
console.log(`${rows.length} cases, ${rows.filter((row) => !row.ok).length} invalid`);
