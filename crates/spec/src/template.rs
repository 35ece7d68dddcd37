//! Templates in spec values: `{{ connections }}`, `{{ env.HOST }}`, `{{ 15 * scale }}s`.
//!
//! Rendering is strict: a variable that does not exist is an error naming it (with a suggestion), never an
//! empty string.

use std::collections::{BTreeMap, BTreeSet};

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::generate::Registry;
use crate::suggest::did_you_mean;

pub(crate) struct Templates {
    env: Environment<'static>,
    /// The per-request generators met while rendering.
    pub registry: Registry,
    /// The spec's resolved variables.
    vars: BTreeMap<String, Value>,
    /// The process environment, as `env.NAME`.
    process_env: BTreeMap<String, String>,
    /// The environment variables templates have read: their values are secret.
    env_read: std::sync::Mutex<BTreeSet<String>>,
}

#[derive(Debug)]
pub(crate) struct TemplateError {
    pub message: String,
    pub help: Option<String>,
}

impl Templates {
    pub fn new(
        vars: BTreeMap<String, Value>,
        process_env: BTreeMap<String, String>,
        base_dir: Option<std::path::PathBuf>,
    ) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Keep values as written: no HTML escaping, no trailing-newline surprises.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_keep_trailing_newline(true);
        let registry = Registry::default();
        crate::generate::register(&mut env, &registry, base_dir);
        Templates { env, registry, vars, process_env, env_read: Default::default() }
    }

    pub fn is_template(s: &str) -> bool {
        s.contains("{{") || s.contains("{%")
    }

    /// The top-level names a template reads (`connections`, `env`), for checking matrix variables are used.
    pub fn names_used(&self, text: &str) -> BTreeSet<String> {
        match self.env.template_from_str(text) {
            Ok(t) => t.undeclared_variables(false).into_iter().collect(),
            Err(_) => BTreeSet::new(),
        }
    }

    /// The values of the environment variables that templates read (`{{ env.NAME }}`).
    pub fn env_values_read(&self) -> Vec<String> {
        let read = self.env_read.lock().unwrap_or_else(|p| p.into_inner());
        read.iter().filter_map(|name| self.process_env.get(name).cloned()).collect()
    }

    /// Notes which environment variables a template reads.
    fn note_env_reads(&self, template: &minijinja::Template<'_, '_>) {
        let names = template.undeclared_variables(true);
        let mut read = self.env_read.lock().unwrap_or_else(|p| p.into_inner());
        for name in names {
            match name.strip_prefix("env.") {
                Some(var) => {
                    read.insert(var.to_owned());
                }
                // `env` used whole (`env['X']`, a loop): every variable it could have read is secret.
                None if name == "env" => read.extend(self.process_env.keys().cloned()),
                None => {}
            }
        }
    }

    pub fn render(&self, text: &str, bindings: &[(String, Value)]) -> Result<String, TemplateError> {
        let mut ctx: BTreeMap<String, Value> = self.vars.clone();
        ctx.insert("env".to_owned(), Value::from_serialize(&self.process_env));
        for (k, v) in bindings {
            ctx.insert(k.clone(), v.clone());
        }
        let template = self.env.template_from_str(text).map_err(|e| TemplateError {
            message: format!("the template does not parse: {}", e.detail().unwrap_or(&e.kind().to_string())),
            help: Some("templates use minijinja (Jinja2) syntax: `{{ name }}`".to_owned()),
        })?;
        if text.contains("env") {
            self.note_env_reads(&template);
        }
        template.render(&ctx).map_err(|e| {
            if e.kind() == minijinja::ErrorKind::UndefinedError {
                // Name the missing variable: the first name the template reads that the context lacks.
                let names: BTreeSet<String> = template.undeclared_variables(true).into_iter().collect();
                for name in names {
                    let top = name.split('.').next().unwrap_or_default().to_owned();
                    if let Some(var) = name.strip_prefix("env.") {
                        if !self.process_env.contains_key(var) {
                            return TemplateError {
                                message: format!("environment variable `{var}` is not set"),
                                help: Some(format!("set {var} in the environment, or give a default: `{{{{ env.{var} | default('...') }}}}`")),
                            };
                        }
                    } else if top != "env" && !ctx.contains_key(&top) {
                        let name = top;
                        let known: Vec<&str> = ctx.keys().map(String::as_str).filter(|k| *k != "env").collect();
                        let help = match did_you_mean(&name, known.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None if known.is_empty() => format!("declare it under `vars:` (for example `vars: {{ {name}: ... }}`)"),
                            None => format!("declare it under `vars:`; known variables: {}", known.join(", ")),
                        };
                        return TemplateError { message: format!("undefined variable `{name}`"), help: Some(help) };
                    }
                }
            }
            TemplateError {
                message: format!("the template cannot be rendered: {}", e.detail().map(str::to_owned).unwrap_or_else(|| e.kind().to_string())),
                help: None,
            }
        })
    }
}
