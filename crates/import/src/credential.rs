//! Credential headers in a written spec: read from the environment, never held.

/// The environment variable a written spec reads a credential header's value from: `Authorization` ->
/// `LOADGATE_AUTHORIZATION`, `X-Api-Key` -> `LOADGATE_X_API_KEY`.
pub fn credential_env_name(header: &str) -> String {
    let name: String =
        header.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("LOADGATE_{name}")
}

/// A credential header's value in a spec written for the user to keep: a reference to the environment (whose
/// values loadgate keeps secret, as `secrets.vars`), never the value given.
pub fn credential_reference(header: &str) -> String {
    format!("{{{{ env.{} }}}}", credential_env_name(header))
}

/// What the user is told of a credential written as a reference.
pub fn credential_note(header: &str) -> String {
    format!(
        "the `{header}` value given is a credential: the spec reads it from the environment (`{}`, kept secret as \
         every `env` value is) instead of holding it; set it before running the spec",
        credential_reference(header)
    )
}
