//! `vars`: the spec's variables, their defaults and what the environment and `--set` make of them.

use std::collections::BTreeMap;

use minijinja::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::node::{Node, NodeKind, Path, Span};
use crate::read::Cx;
use crate::suggest::did_you_mean;
use crate::template::Templates;
use loadgate_model::spec::*;

use super::options::LoadOptions;

pub(super) fn valid_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn to_value(kind: &NodeKind) -> Value {
    match kind {
        NodeKind::Bool(b) => Value::from(*b),
        NodeKind::Int(i) => Value::from(*i),
        NodeKind::Float(f) => Value::from(*f),
        NodeKind::Str(s) => Value::from(s.clone()),
        _ => Value::from(()),
    }
}

/// Resolves `vars`: the spec's defaults, then `LOADGATE_VAR_<NAME>`, then `--set` (the last wins). Also gives
/// the values of the environment variables the defaults read (`{{ env.X }}`): they are secret.
pub(super) fn read_vars(
    root: &Node,
    opts: &LoadOptions,
    diags: &mut Diagnostics,
) -> (BTreeMap<String, Var>, BTreeMap<String, Value>, Vec<String>) {
    let mut vars = BTreeMap::new();
    let mut values = BTreeMap::new();
    let NodeKind::Map(top) = &root.kind else { return (vars, values, Vec::new()) };
    let vars_entry = top.iter().find(|(k, _)| k.name == "vars");
    let no_data =
        crate::generate::DataFiles { base: None, allow_outside: false, max_bytes: 0, read: Default::default() };
    let env_only = Templates::new(BTreeMap::new(), opts.env.clone(), no_data);
    let mut cx = Cx { diags, templates: &env_only, bindings: &[], dynamic: false, vars: &[], vars_only: false };
    let mut declared: Vec<(String, Option<Span>)> = Vec::new();
    if let Some((key, node)) = vars_entry {
        let path = Path::root().key("vars");
        match &node.kind {
            NodeKind::Map(entries) => {
                for (k, v) in entries {
                    let p = path.key(&k.name);
                    if !valid_var_name(&k.name) {
                        cx.error(
                            Diagnostic::error(&p, k.span, format!("variable name `{}` is not an identifier", k.name))
                                .width(k.name.chars().count())
                                .expected("letters, digits and `_`, starting with a letter or `_`")
                                .help(format!(
                                    "templates could not name it; try `{}`",
                                    k.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                                )),
                        );
                        continue;
                    }
                    if k.name == "env" {
                        cx.error(
                            Diagnostic::error(&p, k.span, "`env` is reserved")
                                .width(3)
                                .help("`{{ env.NAME }}` reads the environment; pick another name"),
                        );
                        continue;
                    }
                    let Some(rendered) = cx.render(v, &p) else { continue };
                    if matches!(rendered.kind, NodeKind::Seq(_) | NodeKind::Map(_) | NodeKind::Null) {
                        cx.error(
                            Diagnostic::error(&p, v.span, format!("variable `{}` must have a single value", k.name))
                                .expected("a string, number or boolean")
                                .found(rendered.type_name())
                                .help("to sweep over several values, use a scenario's `matrix`"),
                        );
                        continue;
                    }
                    declared.push((k.name.clone(), k.span));
                    vars.insert(
                        k.name.clone(),
                        Var { value: rendered.scalar_text().unwrap_or_default(), source: VarSource::Default },
                    );
                    values.insert(k.name.clone(), to_value(&rendered.kind));
                }
            }
            NodeKind::Null => {}
            _ => cx.error(
                Diagnostic::error(&path, node.span.or(key.span), "`vars` must be a mapping of names to default values")
                    .expected("a mapping such as `vars: { base_url: http://127.0.0.1:8080 }`")
                    .found(node.type_name()),
            ),
        }
    }
    for (name, var) in vars.iter_mut() {
        let env_name = format!("LOADGATE_VAR_{name}");
        let upper = format!("LOADGATE_VAR_{}", name.to_ascii_uppercase());
        if let Some(v) = opts.env.get(&env_name).or_else(|| opts.env.get(&upper)) {
            *var = Var { value: v.clone(), source: VarSource::Environment };
            values.insert(name.clone(), to_value(&crate::loader::parse_scalar(v)));
        }
    }
    let vars_span = vars_entry.and_then(|(k, _)| k.span);
    for (name, value) in &opts.sets {
        let p = Path::root().key("vars").key(name);
        if let Some(var) = vars.get_mut(name) {
            *var = Var { value: value.clone(), source: VarSource::CommandLine };
            values.insert(name.clone(), to_value(&crate::loader::parse_scalar(value)));
        } else {
            // A `--secret` value is never shown, and the flag is named as it was given.
            let (flag, shown) = if opts.secret_vars.contains(name) {
                ("--secret", loadgate_model::secrets::REDACTED)
            } else {
                ("--set", value.as_str())
            };
            let names: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
            let help = match did_you_mean(name, names.iter().copied()) {
                Some(s) => format!("did you mean `{flag} {s}={shown}`?"),
                None if names.is_empty() => "the spec declares no variables; add them under `vars:`".to_owned(),
                None => format!("the spec declares: {}", names.join(", ")),
            };
            cx.error(
                Diagnostic::error(
                    &p,
                    vars_span.or(Some(Span { line: 1, col: 1 })),
                    format!("`{flag} {name}={shown}` names no variable of this spec"),
                )
                .expected(format!(
                    "one of the variables under `vars:` ({})",
                    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
                ))
                .help(help),
            );
        }
    }
    let env_read = env_only.env_values_read();
    (vars, values, env_read)
}
