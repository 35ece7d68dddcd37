//! Templates in spec values: `{{ connections }}`, `{{ env.HOST }}`, `{{ 15 * scale }}s`.
//!
//! Rendering is strict: a variable that does not exist is an error naming it (with a suggestion), never an
//! empty string. Rendering is bounded: every template runs on the budget of [`crate::sandbox`].

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use minijinja::machinery::{self, Vm};
use minijinja::value::merge_maps;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use crate::generate::{DataFiles, Registry};
use crate::sandbox::{self, Meter};
use crate::suggest::did_you_mean;

pub(crate) struct Templates {
    env: RefCell<Environment<'static>>,
    /// The name each template text is compiled under and the names it reads (or why it does not compile).
    compiled: RefCell<HashMap<String, Compiled>>,
    /// Renderings already done, by template, whether generators work, and the values of the matrix variables
    /// the template reads: a matrix of many cells renders most of its templates with few distinct values.
    rendered: RefCell<HashMap<RenderKey, Result<String, TemplateError>>>,
    /// The per-request generators met while rendering.
    pub registry: Registry,
    /// Where data files (and `target.tls` files) are found.
    pub data: DataFiles,
    /// What the spec's templates have cost so far.
    pub meter: Arc<Meter>,
    /// The spec's resolved variables and `env`, the context of every template.
    context: Value,
    /// The names in `context`.
    names: BTreeSet<String>,
    /// The process environment, as `env.NAME`.
    process_env: BTreeMap<String, String>,
    /// The environment variables templates have read: their values are secret.
    env_read: std::sync::Mutex<BTreeSet<String>>,
}

/// A compiled template's name and the names it reads, or why it does not compile.
type Compiled = Result<(String, Vec<String>), TemplateError>;

/// A rendering: the template's name, whether generators work, the values of the matrix variables it reads.
type RenderKey = (String, bool, Vec<Value>);

/// Renderings longer than this are not kept for reuse.
const MEMO_MAX_BYTES: usize = 4096;
/// How many renderings are kept for reuse.
const MEMO_MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone)]
pub(crate) struct TemplateError {
    pub message: String,
    pub help: Option<String>,
    /// A per-request generator was called where generators do not work.
    pub outside_request: bool,
}

impl TemplateError {
    fn new(message: String, help: Option<String>) -> Self {
        TemplateError { message, help, outside_request: false }
    }
}

impl Templates {
    pub fn new(vars: BTreeMap<String, Value>, process_env: BTreeMap<String, String>, data: DataFiles) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Keep values as written: no HTML escaping, no trailing-newline surprises.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_keep_trailing_newline(true);
        let meter = Arc::new(Meter::default());
        sandbox::install(&mut env, &meter);
        let registry = Registry::default();
        crate::generate::register(&mut env, &registry, data.clone(), &meter);
        let mut context = vars;
        context.insert("env".to_owned(), Value::from_serialize(&process_env));
        let names = context.keys().cloned().collect();
        Templates {
            env: RefCell::new(env),
            compiled: RefCell::default(),
            rendered: RefCell::default(),
            registry,
            data,
            meter,
            context: Value::from_serialize(&context),
            names,
            process_env,
            env_read: Default::default(),
        }
    }

    pub fn is_template(s: &str) -> bool {
        s.contains("{{") || s.contains("{%")
    }

    /// The top-level names a template reads (`connections`, `env`), for checking matrix variables are used.
    pub fn names_used(&self, text: &str) -> BTreeSet<String> {
        self.compile(text).map(|(_, reads)| reads.into_iter().collect()).unwrap_or_default()
    }

    /// Whether `name` is a spec variable (or `env`), or a function templates call.
    pub fn is_defined(&self, name: &str) -> bool {
        self.names.contains(name) || self.env.borrow().globals().any(|(g, _)| g == name)
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

    /// Renders `text` with the matrix `bindings` on top of the spec's variables. `dynamic` says whether
    /// per-request generators work in this value.
    pub fn render(&self, text: &str, bindings: &[(String, Value)], dynamic: bool) -> Result<String, TemplateError> {
        self.meter.reset();
        let (name, reads) = self.compile(text)?;
        let key = if bindings.is_empty() {
            None
        } else {
            let values =
                reads.iter().filter_map(|n| bindings.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone())).collect();
            Some((name.clone(), dynamic, values))
        };
        if let Some(done) = key.as_ref().and_then(|k| self.rendered.borrow().get(k).cloned()) {
            return done;
        }
        let result = self.render_now(&name, bindings, dynamic);
        let small = result.as_ref().map_or(true, |text| text.len() <= MEMO_MAX_BYTES);
        if let Some(key) = key.filter(|_| small) {
            let mut memo = self.rendered.borrow_mut();
            if memo.len() < MEMO_MAX_ENTRIES {
                memo.insert(key, result.clone());
            }
        }
        result
    }

    fn render_now(&self, name: &str, bindings: &[(String, Value)], dynamic: bool) -> Result<String, TemplateError> {
        self.registry.set_dynamic(dynamic);
        let env = self.env.borrow();
        let template = env.get_template(name).map_err(|e| TemplateError::new(e.to_string(), None))?;
        let compiled = machinery::get_compiled_template(&template);
        let unsupported = |message: String| TemplateError::new(message, None);
        let instructions = sandbox::harden(&compiled.instructions).map_err(unsupported)?;
        let mut blocks = BTreeMap::new();
        for (name, block) in &compiled.blocks {
            blocks.insert(*name, sandbox::harden(block).map_err(unsupported)?);
        }
        if let Err(e) = self.meter.begin(template.source().len(), instructions.len()) {
            return Err(self.limit_error(&e));
        }
        // The matrix cell's bindings first, then the spec's variables and `env`.
        let bound: Value = bindings.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let ctx = merge_maps([bound, self.context.clone()]);
        let mut rendered = String::new();
        let result = {
            let mut out = machinery::make_string_output(&mut rendered);
            Vm::new(&env).eval(&instructions, ctx, &blocks, &mut out, AutoEscape::None)
        };
        match result {
            Ok(_) => Ok(rendered),
            Err(e) => {
                Err(self
                    .error(&e, &template, &|name| bindings.iter().any(|(k, _)| k == name) || self.names.contains(name)))
            }
        }
    }

    /// The name the template of `text` is compiled under: compiled once per spec, whatever the number of matrix
    /// cells that render it.
    fn compile(&self, text: &str) -> Compiled {
        if let Some(known) = self.compiled.borrow().get(text) {
            return known.clone();
        }
        let result = self.compile_new(text);
        self.compiled.borrow_mut().insert(text.to_owned(), result.clone());
        result
    }

    fn compile_new(&self, text: &str) -> Compiled {
        let parse_error = |e: &minijinja::Error| {
            TemplateError::new(
                format!("the template does not parse: {}", e.detail().unwrap_or(&e.kind().to_string())),
                Some("templates use minijinja (Jinja2) syntax: `{{ name }}`".to_owned()),
            )
        };
        // Parsing alone computes nothing: it says what is wrong with a template that does not parse.
        let syntax = || {
            let ws = machinery::WhitespaceConfig { keep_trailing_newline: true, ..Default::default() };
            machinery::parse(text, "<template>", Default::default(), ws).err()
        };
        self.meter.charge(text.len() as u64).map_err(|e| self.limit_error(&e))?;
        let prepared = match sandbox::prepare(text) {
            Ok(Some(prepared)) => prepared,
            Ok(None) => {
                return Err(syntax().map_or_else(
                    || TemplateError::new("the template does not parse".to_owned(), None),
                    |e| parse_error(&e),
                ))
            }
            Err(message) => return Err(TemplateError::new(message, None)),
        };
        let name = format!("template {}", self.compiled.borrow().len());
        if let Err(e) = self.env.borrow_mut().add_template_owned(name.clone(), prepared) {
            return Err(syntax().map_or_else(|| parse_error(&e), |e| parse_error(&e)));
        }
        let env = self.env.borrow();
        let template = env.get_template(&name).map_err(|e| TemplateError::new(e.to_string(), None))?;
        if text.contains("env") {
            self.note_env_reads(&template);
        }
        let reads = template.undeclared_variables(false).into_iter().collect();
        Ok((name, reads))
    }

    fn limit_error(&self, e: &minijinja::Error) -> TemplateError {
        match self.meter.take_exceeded() {
            Some(x) => TemplateError::new(x.message, Some(x.help)),
            None => TemplateError::new(e.to_string(), None),
        }
    }

    fn error(
        &self,
        e: &minijinja::Error,
        template: &minijinja::Template<'_, '_>,
        defined: &dyn Fn(&str) -> bool,
    ) -> TemplateError {
        if let Some(x) = self.meter.take_exceeded() {
            return TemplateError::new(x.message, Some(x.help));
        }
        if self.registry.was_refused() {
            return TemplateError { message: String::new(), help: None, outside_request: true };
        }
        if e.kind() == minijinja::ErrorKind::OutOfFuel {
            let x = sandbox::out_of_fuel();
            return TemplateError::new(x.message, Some(x.help));
        }
        // A name the template reads that does not exist is the cause, whatever the error says (`{{ x + 1 }}` fails
        // as an addition): name the first one the context lacks.
        {
            let names: BTreeSet<String> = template.undeclared_variables(true).into_iter().collect();
            for name in names {
                let top = name.split('.').next().unwrap_or_default().to_owned();
                if let Some(var) = name.strip_prefix("env.") {
                    if !self.process_env.contains_key(var) {
                        return TemplateError::new(
                            format!("environment variable `{var}` is not set"),
                            Some(format!(
                                "set {var} in the environment, or give a default: `{{{{ env.{var} | default('...') }}}}`"
                            )),
                        );
                    }
                } else if top != "env" && !defined(&top) && !self.env.borrow().globals().any(|(g, _)| g == top) {
                    let name = top;
                    let known: Vec<&str> = self.names.iter().map(String::as_str).filter(|k| *k != "env").collect();
                    let help = match did_you_mean(&name, known.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None if known.is_empty() => {
                            format!("declare it under `vars:` (for example `vars: {{ {name}: ... }}`)")
                        }
                        None => format!("declare it under `vars:`; known variables: {}", known.join(", ")),
                    };
                    return TemplateError::new(format!("undefined variable `{name}`"), Some(help));
                }
            }
        }
        TemplateError::new(
            format!(
                "the template cannot be rendered: {}",
                e.detail().map(str::to_owned).unwrap_or_else(|| e.kind().to_string())
            ),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates() -> Templates {
        let vars = BTreeMap::from([
            ("scale".to_owned(), Value::from(2)),
            ("big".to_owned(), Value::from("y".repeat(600_000))),
            ("name".to_owned(), Value::from("api")),
        ]);
        let env = BTreeMap::from([("HOST".to_owned(), "example".to_owned())]);
        Templates::new(
            vars,
            env,
            DataFiles { base: None, allow_outside: false, max_bytes: 1 << 20, read: Default::default() },
        )
    }

    fn render(t: &Templates, text: &str) -> Result<String, TemplateError> {
        t.render(text, &[], false)
    }

    #[test]
    fn the_rewritten_instructions_keep_minijinja_semantics() {
        let t = templates();
        let cases = [
            ("{{ 15 * scale }}s", "30s"),
            ("{{ 'ab' ~ scale ~ 'c' }}", "ab2c"),
            ("{{ 'a' + 'b' }}|{{ [1] + [2] }}|{{ 1 + 2.5 }}", "ab|[1, 2]|3.5"),
            ("{{ 'ab' * 3 }}|{{ [1, 2] * 2 }}", "ababab|[1, 2, 1, 2]"),
            (
                "{{ 1 < scale }}{{ scale <= 1 }}{{ name == 'api' }}{{ name != 'api' }}{{ 3 > scale }}{{ 3 >= 4 }}",
                "TrueFalseTrueFalseTrueFalse",
            ),
            ("{{ 'p' in name }}{{ 'x' not in name }}{{ scale in [1, 2] }}", "TrueTrueTrue"),
            ("{{ name[1] }}{{ name[0:2] }}{{ name[::-1] }}{{ [1, 2, 3][1:] }}", "papipa[2, 3]"),
            ("{% for i in range(3) %}{{ i }},{% endfor %}", "0,1,2,"),
            ("{% for i in [] %}x{% else %}empty{% endfor %}", "empty"),
            ("{% if scale > 1 %}big{% else %}small{% endif %}", "big"),
            ("{% macro twice(x) %}{{ x }}{{ x }}{% endmacro %}{{ twice(name) }}", "apiapi"),
            (
                "{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
                "6",
            ),
            ("{{ env.HOST | upper }}{{ missing | default('d') }}{{ [3, 1] | max }}", "EXAMPLEd3"),
            ("{{ ['a', 'b'] | join('-') }}{{ 'aXb' | replace('X', '--') }}{{ 'abc' | length }}", "a-ba--b3"),
            ("{{ [1, 2, 3] | select('odd') | list }}{{ ['a'] | map('upper') | join }}", "[1, 3]A"),
            ("{% for row in [[1, 2], [3]] recursive %}{{ row }}{% endfor %}", "[1, 2][3]"),
            ("{{ 'yes' if name is startingwith('a') else 'no' }}{{ scale is eq 2 }}", "yesTrue"),
            ("{%- raw -%}{{ x }}{%- endraw -%}", "{{ x }}"),
            ("{{ [[7, 8]][0].1 }}{{ 'a' 'b' }}{{ -1 }}{{ 1e3 }}{{ \"q\\\"q\" }}", "8ab-11000.0q\"q"),
            ("{{ {'k': 2}['k'] }}{{ name is eq 'api' }}{{ 9 is divisibleby 3 }}{{ [1, 2, 3][1:2] }}", "2TrueTrue[2]"),
            ("{% macro m(x='d', n=2) %}{{ x * n }}{% endmacro %}{{ m() }}{{ m('e', 1) }}", "dde"),
            ("{% set x = 'a' ~ 1 %}{{ x }}{{ none is none }}{{ true and not false }}", "a1TrueTrue"),
        ];
        for (text, expected) in cases {
            match render(&t, text) {
                Ok(out) => assert_eq!(out, expected, "{text}"),
                Err(e) => panic!("{text}: {e:?}"),
            }
        }
    }

    #[test]
    fn undefined_names_are_still_named() {
        let t = templates();
        let e = render(&t, "{{ scal + 1 }}").unwrap_err();
        assert!(e.message.contains("scal"), "{e:?}");
        let e = render(&t, "{{ env.NOPE }}").unwrap_err();
        assert!(e.message.contains("NOPE"), "{e:?}");
    }

    #[test]
    fn large_values_are_refused_before_they_are_built() {
        let t = templates();
        for text in [
            "{{ 'x' * 100000000 }}",
            "{{ ('x' * 1000000) ~ ('x' * 1000000) }}",
            "{{ big ~ big }}",
            "{{ big + big }}",
            "{{ [big] * 3 }}",
            "{% for i in range(3) %}{{ big }}{% endfor %}",
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
            "{{ big | replace('y', 'yy') }}",
            "{% set s = 'x' * 100000000 %}",
            "{{ ('x' * 100000000) | length }}",
        ] {
            let e = render(&t, text).unwrap_err();
            assert!(e.message.contains("longer than 1 MiB"), "{text}: {e:?}");
        }
    }

    #[test]
    fn long_loops_and_repeated_work_run_out_of_budget() {
        let t = templates();
        let e =
            render(&t, "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}").unwrap_err();
        assert!(e.message.contains("instructions"), "{e:?}");
        let e = render(&t, "{% for i in range(1000) %}{% if big == big %}{% endif %}{% endfor %}").unwrap_err();
        assert!(e.message.contains("copies, compares or builds"), "{e:?}");
        let e = render(&t, "{{ big | indent(100000000) }}").unwrap_err();
        assert!(e.message.contains("`indent`"), "{e:?}");
        let e = render(&t, "{{ 1 < scale < 3 }}").unwrap_err();
        assert!(e.message.contains("chained comparisons"), "{e:?}");
        // Constant expressions are not folded at compile time, where nothing would measure them.
        let e = render(&t, "{{ [1] * 10**12 == [1] * 10**12 }}").unwrap_err();
        assert!(e.message.contains("longer than 1 MiB"), "{e:?}");
        let e = render(&t, "{{ 2 in [1] * 10**12 }}").unwrap_err();
        assert!(e.message.contains("longer than 1 MiB"), "{e:?}");
        let chain = format!("{{{{ 1{} }}}}", " ~ 1".repeat(1000));
        let e = render(&t, &chain).unwrap_err();
        assert!(e.message.contains("operators"), "{e:?}");
    }

    #[test]
    fn the_spec_wide_budget_spans_renderings() {
        let t = templates();
        let template = "{% for i in range(10000) %}{% endfor %}";
        let mut refused = None;
        for i in 0..100 {
            if let Err(e) = render(&t, template) {
                refused = Some((i, e));
                break;
            }
        }
        let (i, e) = refused.expect("the spec-wide budget ends it");
        assert!(i > 5, "a few renderings fit: {i}");
        assert!(e.message.contains("the spec's templates together"), "{e:?}");
    }
}
