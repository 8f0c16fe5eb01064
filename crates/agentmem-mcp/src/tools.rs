//! The tools the server lists: the reference memory server's nine, with the names, titles,
//! descriptions, annotations and schemas it lists (recorded from its `tools/list` answer and
//! served as recorded), then agentmem's own. Both lists are JSON files beside this one.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use rmcp::model::{ErrorData, JsonObject, Tool};

/// The reference server's `tools/list` answer (release 2026.8.31), as it gives it.
const REFERENCE_TOOLS: &str = include_str!("schemas/reference_tools.json");

/// agentmem's own tools, in the same form.
const AGENTMEM_TOOLS: &str = include_str!("schemas/agentmem_tools.json");

/// Every tool listed, and each one's input schema by name.
#[derive(Debug)]
pub(crate) struct Catalog {
    /// The tools, in the order listed.
    pub(crate) tools: Vec<Tool>,
    inputs: HashMap<String, Arc<JsonObject>>,
}

impl Catalog {
    /// The input schema of the tool `name`; `None` for a tool not listed.
    pub(crate) fn input_schema(&self, name: &str) -> Option<&JsonObject> {
        self.inputs.get(name).map(|schema| schema.as_ref())
    }
}

static CATALOG: LazyLock<Result<Catalog, String>> = LazyLock::new(|| {
    let mut tools: Vec<Tool> = Vec::new();
    for (what, json) in [("reference", REFERENCE_TOOLS), ("agentmem", AGENTMEM_TOOLS)] {
        let listed: Vec<Tool> = serde_json::from_str(json)
            .map_err(|e| format!("the {what} tool list does not parse: {e}"))?;
        tools.extend(listed);
    }
    let inputs = tools
        .iter()
        .map(|t| (t.name.to_string(), t.input_schema.clone()))
        .collect();
    Ok(Catalog { tools, inputs })
});

/// The catalog; an internal error only if a list built into the program does not parse
/// (a test makes sure both do).
pub(crate) fn catalog() -> Result<&'static Catalog, ErrorData> {
    CATALOG
        .as_ref()
        .map_err(|e| ErrorData::internal_error(e.clone(), None))
}

/// The reference server's `tools/list` entries as it lists them (for comparing with what
/// this server lists).
pub fn reference_tools_json() -> &'static str {
    REFERENCE_TOOLS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_lists_parse_and_names_are_unique() {
        let catalog = catalog().expect("the built-in tool lists parse");
        assert_eq!(catalog.tools.len(), 17);
        assert_eq!(catalog.inputs.len(), 17);
        for tool in &catalog.tools {
            assert!(
                tool.output_schema.is_some(),
                "{} has an output schema",
                tool.name
            );
            assert!(tool.annotations.is_some(), "{} has annotations", tool.name);
        }
    }
}
