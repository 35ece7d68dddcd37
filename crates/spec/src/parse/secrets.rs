//! `secrets`: the variables and headers whose values must never reach an artifact, and the collection of every
//! secret value of a read spec into its [`Redactor`].

use std::collections::{BTreeMap, BTreeSet};

use loadgate_model::secrets::{is_credential_header, Redactor};

use crate::diag::Diagnostic;
use crate::node::{Node, Path};
use crate::read::Cx;
use crate::suggest::did_you_mean;
use loadgate_model::spec::*;

use super::keys::SECRETS_KEYS;

/// The spec's `secrets` block: variable names and extra credential headers.
#[derive(Debug, Clone, Default)]
pub(super) struct SecretNames {
    pub vars: Vec<String>,
    pub headers: Vec<String>,
}

/// Reads `secrets: { vars: [...], headers: [...] }`; a variable name must be declared under `vars`.
pub(super) fn read_secrets(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    declared: &BTreeMap<String, Var>,
) -> Option<SecretNames> {
    let f = cx.map(node, path, SECRETS_KEYS, "`secrets`")?;
    let mut names = SecretNames::default();
    let mut ok = true;
    for (key, out) in [("vars", &mut names.vars), ("headers", &mut names.headers)] {
        let Some((n, p)) = f.get(key) else { continue };
        let Some(items) = cx.list(n, &p, &format!("`secrets.{key}`")) else {
            ok = false;
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let ip = p.index(i);
            let Some(name) = cx.string(item, &ip, "a name") else {
                ok = false;
                continue;
            };
            if key == "vars" && !declared.contains_key(&name) {
                let help = match did_you_mean(&name, declared.keys().map(String::as_str)) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("declare it under `vars:` (for example `vars: {{ {name}: \"\" }}`)"),
                };
                cx.error(
                    Diagnostic::error(&ip, item.span, format!("`{name}` is not a variable of this spec"))
                        .expected("the name of a variable declared under `vars`")
                        .help(help),
                );
                ok = false;
                continue;
            }
            out.push(name);
        }
    }
    ok.then_some(names)
}

/// Every secret value of a read spec: secret variables' values, values read from the environment through
/// `{{ env.NAME }}`, and the values of credential headers in every request.
pub(super) fn collect(
    spec: &Spec,
    names: &SecretNames,
    command_line_secrets: &BTreeSet<String>,
    env_values: impl IntoIterator<Item = String>,
) -> Redactor {
    let secret_vars: Vec<String> = names.vars.iter().cloned().chain(command_line_secrets.iter().cloned()).collect();
    let mut values: Vec<String> = env_values.into_iter().collect();
    values.extend(secret_vars.iter().filter_map(|v| spec.vars.get(v)).map(|v| v.value.clone()));
    let credential = |values: &mut Vec<String>, name: &str, value: &str| {
        if is_credential_header(name, &names.headers) {
            values.push(value.to_owned());
            // `Bearer TOKEN`: the token alone is secret too, wherever it shows.
            if let Some((_, token)) = value.split_once(' ') {
                values.push(token.trim().to_owned());
            }
        }
    };
    // An output's credential headers and the password in its URL: sent to the endpoint, never written.
    for output in &spec.outputs {
        for (name, value) in &output.headers {
            credential(&mut values, name, value);
        }
        if let Some(password) = url_password(&output.url) {
            values.push(password.to_owned());
        }
    }
    let mut headers = |request: &Request| {
        for (name, value) in &request.headers {
            credential(&mut values, name, value);
        }
    };
    for cell in spec.scenarios.iter().flat_map(|s| &s.cells) {
        headers(&cell.request);
        cell.mix.iter().for_each(|m| headers(&m.request));
        for step in &cell.session {
            if let SessionStep::Request { request, .. } = step {
                headers(request);
            }
        }
    }
    Redactor::new(values, secret_vars)
}

/// The password of `http://user:password@host/...`, if the URL has one.
fn url_password(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    userinfo.split_once(':').map(|(_, p)| p).filter(|p| !p.is_empty())
}
