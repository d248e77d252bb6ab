//! results.json: the whole report, read back by `compare` and by re-rendering.

use serde_json::Value;

use super::Report;
use super::ScenarioResult;

/// The report as pretty-printed JSON.
pub fn json(report: &Report) -> String {
    // Only non-string map keys or a failing Serialize impl can make this fail; Report has neither.
    let mut text = serde_json::to_string_pretty(report).expect("a Report always serializes");
    text.push('\n');
    text
}

/// Parses results.json; the error says whether the text is not JSON at all, or which field
/// (and which result, by index and scenario) is missing or of the wrong type.
pub fn from_json(text: &str) -> Result<Report, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("not a JSON document: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err(format!(
            "expected a JSON object (an icbench report), found {}",
            kind(&value)
        ));
    };
    // Pinpoint a bad result first: serde's own error for it would not say which one.
    if let Some(Value::Array(results)) = object.get("results") {
        for (i, result) in results.iter().enumerate() {
            if let Err(e) = serde_json::from_value::<ScenarioResult>(result.clone()) {
                return Err(format!("results[{i}]{}: {e}", scenario_hint(result)));
            }
        }
    }
    serde_json::from_value(value).map_err(|e| format!("not an icbench report: {e}"))
}

/// ` (btree/-/middle/insert/10)` when the result carries enough to name it.
fn scenario_hint(result: &Value) -> String {
    let field = |name: &str| {
        result.get(name).map(|v| match v {
            Value::String(s) if s.is_empty() => "-".to_string(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    let parts: Option<Vec<String>> = ["store", "journal_mode", "position", "operation", "batch"]
        .iter()
        .map(|n| field(n))
        .collect();
    parts
        .map(|p| format!(" ({})", p.join("/")))
        .unwrap_or_default()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
