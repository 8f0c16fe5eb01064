//! Checking a tool call's arguments against the tool's input schema before anything runs, with
//! the reference server's messages: its SDK parses arguments with zod and reports each problem
//! as `Invalid input: expected string, received number at entities[0].name`, one per line.
//!
//! Only what the served schemas use is understood: `type` (object, array, string, boolean,
//! integer, number), `properties`, `required`, `items` and `minimum`. Keys a schema does not
//! name are ignored, as zod strips them.

use agentmem_core::{Error, Result};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The arguments as `T`, once [`problems`] found none: a mismatch left is reported as
/// `InvalidInput` all the same. Keys `T` does not name are ignored.
pub(crate) fn parse<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T> {
    from_value(Value::Object(args))
}

/// The required argument `key` as `T`, with the error [`parse`] gives for a struct of that
/// one field.
pub(crate) fn field<T: DeserializeOwned>(mut args: Map<String, Value>, key: &str) -> Result<T> {
    let value = args
        .remove(key)
        .ok_or_else(|| Error::invalid_input(format!("invalid arguments: missing field `{key}`")))?;
    from_value(value)
}

fn from_value<T: DeserializeOwned>(value: Value) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|e| Error::invalid_input(format!("invalid arguments: {e}")))
}

/// Reads an optional count given as a JSON integer, or as a float without a fraction (`3.0`,
/// which JavaScript clients send for 3 and the schema check accepts).
pub(crate) fn count<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<usize>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
            .map(|f| f as u64)
    });
    whole
        .and_then(|n| usize::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| D::Error::custom(format!("{number} is not a count")))
}

/// One step of the path to a value: a property name or an array index.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The problems with `args` under `schema`, each as zod words it; empty when they conform.
pub(crate) fn problems(schema: &Map<String, Value>, args: &Map<String, Value>) -> Vec<String> {
    let mut found = Vec::new();
    // Arguments are always an object (the protocol says so), as every tool's schema wants.
    check_object(schema, args, &mut Vec::new(), &mut found);
    found
}

fn check<'a>(
    schema: &'a Map<String, Value>, value: Option<&'a Value>, path: &mut Vec<Step<'a>>,
    found: &mut Vec<String>,
) {
    let Some(kind) = schema.get("type").and_then(Value::as_str) else {
        return;
    };
    let problem = match (kind, value) {
        ("object", Some(Value::Object(map))) => return check_object(schema, map, path, found),
        ("array", Some(Value::Array(items))) => return check_items(schema, items, path, found),
        ("string", Some(Value::String(_))) | ("boolean", Some(Value::Bool(_))) => return,
        ("number", Some(Value::Number(_))) => return,
        ("integer", Some(Value::Number(n))) => match n.as_i64().or_else(|| {
            // A float with no fraction (`3.0`) is an integer to JavaScript and zod.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        }) {
            None => "Invalid input: expected int, received number".to_string(),
            Some(int) => match schema.get("minimum").and_then(Value::as_i64) {
                Some(min) if int < min => format!("Too small: expected number to be >={min}"),
                _ => return,
            },
        },
        _ => format!(
            "Invalid input: expected {}, received {}",
            expected_name(kind),
            received_name(value)
        ),
    };
    found.push(at(problem, path));
}

fn check_object<'a>(
    schema: &'a Map<String, Value>, map: &'a Map<String, Value>, path: &mut Vec<Step<'a>>,
    found: &mut Vec<String>,
) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required = |key: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(key)))
    };
    for (key, sub) in properties {
        let (value, sub) = (map.get(key), sub.as_object());
        if let (Some(sub), true) = (sub, value.is_some() || required(key)) {
            path.push(Step::Key(key));
            check(sub, value, path, found);
            path.pop();
        }
    }
}

fn check_items<'a>(
    schema: &'a Map<String, Value>, items: &'a [Value], path: &mut Vec<Step<'a>>,
    found: &mut Vec<String>,
) {
    let Some(item_schema) = schema.get("items").and_then(Value::as_object) else {
        return;
    };
    for (index, item) in items.iter().enumerate() {
        path.push(Step::Index(index));
        check(item_schema, Some(item), path, found);
        path.pop();
    }
}

/// zod's name for an expected JSON Schema type.
fn expected_name(kind: &str) -> &str {
    match kind {
        "integer" => "number",
        other => other,
    }
}

/// zod's name for the type of what was given (`undefined` when nothing was).
fn received_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

/// `problem at path` as the reference's SDK writes paths (`entities[0].name`); the problem
/// alone at the top level.
fn at(problem: String, path: &[Step<'_>]) -> String {
    if path.is_empty() {
        return problem;
    }
    let mut out = format!("{problem} at ");
    for (i, step) in path.iter().enumerate() {
        match step {
            Step::Key(key) if i == 0 => out.push_str(key),
            Step::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Step::Index(index) if i == 0 => out.push_str(&index.to_string()),
            Step::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn entity_schema() -> Map<String, Value> {
        object(json!({
            "type": "object",
            "properties": {"entities": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "entityType": {"type": "string"},
                    "observations": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["name", "entityType", "observations"]
            }}},
            "required": ["entities"]
        }))
    }

    #[test]
    fn problems_are_worded_and_ordered_as_the_reference_sdk_does() {
        // The reference server's answer to these arguments, recorded from it.
        let args = object(json!({"entities": [
            {"name": 1, "entityType": null},
            {"observations": [1, "a", true]},
            5
        ]}));
        assert_eq!(
            problems(&entity_schema(), &args).join("\n"),
            "Invalid input: expected string, received number at entities[0].name\n\
             Invalid input: expected string, received null at entities[0].entityType\n\
             Invalid input: expected array, received undefined at entities[0].observations\n\
             Invalid input: expected string, received undefined at entities[1].name\n\
             Invalid input: expected string, received undefined at entities[1].entityType\n\
             Invalid input: expected string, received number at entities[1].observations[0]\n\
             Invalid input: expected string, received boolean at entities[1].observations[2]\n\
             Invalid input: expected object, received number at entities[2]"
        );
        assert_eq!(
            problems(&entity_schema(), &Map::new()),
            ["Invalid input: expected array, received undefined at entities"]
        );
    }

    #[test]
    fn a_field_reads_as_a_struct_of_that_one_field_does() {
        #[derive(Deserialize)]
        struct Names {
            names: Vec<String>,
        }
        let given = [
            json!({"names": ["a", "b"], "extra": 1}),
            json!({}),
            json!({"names": 5}),
            json!({"names": null}),
        ];
        for args in given {
            let whole = parse::<Names>(object(args.clone())).map(|n| n.names);
            let one = field::<Vec<String>>(object(args), "names");
            assert_eq!(
                whole.map_err(|e| e.to_string()),
                one.map_err(|e| e.to_string())
            );
        }
    }

    #[test]
    fn unknown_keys_are_ignored_and_optional_ones_checked_only_when_given() {
        let schema = object(json!({
            "type": "object",
            "properties": {"limit": {"type": "integer", "minimum": 0}, "q": {"type": "string"}},
            "required": ["q"]
        }));
        assert!(problems(&schema, &object(json!({"q": "x", "extra": [1]}))).is_empty());
        assert!(problems(&schema, &object(json!({"q": "x", "limit": 3.0}))).is_empty());
        assert_eq!(
            problems(&schema, &object(json!({"q": "x", "limit": 1.5}))),
            ["Invalid input: expected int, received number at limit"]
        );
        assert_eq!(
            problems(&schema, &object(json!({"q": "x", "limit": -1}))),
            ["Too small: expected number to be >=0 at limit"]
        );
        assert_eq!(
            problems(&schema, &object(json!({"q": "x", "limit": "3"}))),
            ["Invalid input: expected number, received string at limit"]
        );
    }
}
