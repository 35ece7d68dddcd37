//! The history store, the same suite on SQLite and on a real PostgreSQL server (skipped, saying why, when
//! PostgreSQL is not installed: see `support/postgres.rs`).

mod support;

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use loadgate_history::error::HistoryError;
use loadgate_history::record::{InstanceRecord, RecordMeta, RunRecord, RECORD_VERSION};
use loadgate_history::store::{Added, Imported, Query, Store, SCHEMA_VERSION};
use loadgate_results::fixture;
use support::postgres::PgServer;

/// Where fresh stores come from: files in a temporary directory, or databases of a server of the test's own.
enum Place {
    Sqlite(tempfile::TempDir),
    Postgres(PgServer),
}

static FRESH: AtomicUsize = AtomicUsize::new(0);

impl Place {
    fn sqlite() -> Place {
        Place::Sqlite(tempfile::tempdir().expect("a temporary directory"))
    }

    /// A server, or `None` (the test skips) when PostgreSQL is not installed.
    fn postgres() -> Option<Place> {
        match support::postgres::bin_dir() {
            Err(why) => {
                eprintln!("skipped: {why}");
                None
            }
            Ok(_) => Some(Place::Postgres(PgServer::start().unwrap_or_else(|why| panic!("{why}")))),
        }
    }

    /// The location of a store nobody used yet.
    fn fresh(&self) -> String {
        let n = FRESH.fetch_add(1, Ordering::Relaxed);
        match self {
            Place::Sqlite(dir) => dir.path().join(format!("history-{n}.db")).display().to_string(),
            Place::Postgres(server) => server.create_database(&format!("history_{n}")).expect("a database"),
        }
    }

    fn open_fresh(&self) -> Store {
        Store::open(&self.fresh()).expect("a fresh store opens")
    }
}

/// Runs SQL on the store's own connection (to damage it, or to look at it).
fn raw(store: &mut Store, sql: &str) {
    match store {
        Store::Sqlite(s) => s.connection().execute_batch(sql).expect("raw SQL on SQLite"),
        Store::Postgres(s) => s.client().batch_execute(sql).expect("raw SQL on PostgreSQL"),
    }
}

/// Every test below, once per engine.
macro_rules! on_both_engines {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $test() { super::$test(&super::Place::sqlite()) } )*
        }
        mod postgres {
            $( #[test] fn $test() { if let Some(place) = super::Place::postgres() { super::$test(&place) } } )*
        }
    };
}

on_both_engines!(
    a_new_store_gets_the_schema,
    a_store_of_the_first_schema_is_brought_up_to_date_keeping_its_runs,
    runs_come_back_as_they_were_added,
    adding_a_run_twice_finds_it,
    queries_filter_and_limit,
    export_then_import_is_the_same_history,
    a_bad_line_imports_nothing,
    writers_on_threads_lose_nothing,
    writers_in_processes_lose_nothing,
    a_newer_schema_is_refused_untouched,
    a_foreign_database_is_refused,
    damaged_rows_are_errors,
    passwords_never_show,
);

/// A small run: one instance with two repetitions.
fn small(n: usize, spec: &str, branch: Option<&str>, machine: &str, started_at: &str) -> RunRecord {
    let metrics =
        |base: f64| BTreeMap::from([("p99".to_owned(), base + 0.25), ("throughput".to_owned(), 1000.0 + base)]);
    RunRecord {
        record_version: RECORD_VERSION,
        run_id: format!("{n:064x}"),
        spec: spec.to_owned(),
        spec_file: format!("specs/{spec}.yaml"),
        plan_hash: "sha256:0123".to_owned(),
        commit: Some(format!("c{n}")),
        branch: branch.map(str::to_owned),
        label: (n % 3 == 0).then(|| "nightly".to_owned()),
        started_at: started_at.to_owned(),
        machine: machine.to_owned(),
        machine_summary: "Test CPU · 2 CPUs · kvm".to_owned(),
        loadgate_version: "0.1.0".to_owned(),
        outcome: "passed".to_owned(),
        design: (n % 5 == 4).then(|| "duet".to_owned()),
        instances: vec![InstanceRecord {
            index: 0,
            name: "api[connections=16]".to_owned(),
            scenario: "api".to_owned(),
            matrix: vec![("connections".to_owned(), "16".to_owned())],
            gate: true,
            metrics: metrics(n as f64),
            repetitions: vec![metrics(1.0), metrics(2.0), BTreeMap::new()],
            histogram: None,
            profile: (n % 2 == 0).then(|| format!("profiled (cpu from cpu, {n} samples)")),
        }],
    }
}

/// The fixtures of loadgate_results as records, a minute apart.
fn realistic() -> Vec<RunRecord> {
    let runs =
        [fixture::sample_run(), fixture::sample_ab_run(), fixture::sample_capacity_run(), fixture::sample_http2_run()];
    runs.iter()
        .enumerate()
        .map(|(i, results)| {
            let mut results = results.clone();
            results.started_at = format!("2025-01-01T12:0{i}:00Z");
            let meta = RecordMeta { branch: Some("main".to_owned()), label: None, commit: None };
            RunRecord::from_results(&results, &meta)
        })
        .collect()
}

fn a_new_store_gets_the_schema(place: &Place) {
    let location = place.fresh();
    let mut store = Store::open(&location).expect("opens");
    assert_eq!(store.schema_version().expect("a version"), SCHEMA_VERSION);
    assert!(store.runs(&Query::default()).expect("runs").is_empty());
    drop(store);
    // Opening it again finds it as it is.
    let mut store = Store::open(&location).expect("opens again");
    assert_eq!(store.schema_version().expect("a version"), SCHEMA_VERSION);
    let described = store.describe();
    match place {
        Place::Sqlite(_) => assert_eq!(described, format!("SQLite file {location}")),
        Place::Postgres(server) => {
            assert!(described.starts_with(&format!("PostgreSQL at 127.0.0.1:{}/history_", server.port())))
        }
    }
}

fn runs_come_back_as_they_were_added(place: &Place) {
    let mut store = place.open_fresh();
    let records = realistic();
    // Added newest first: read back oldest first.
    for (i, record) in records.iter().enumerate().rev() {
        assert!(matches!(store.add(record).expect("adds"), Added::New { .. }), "{i}");
    }
    let back = store.runs(&Query::default()).expect("runs");
    assert_eq!(back, records);
    assert!(back[1].instances[0].repetitions.len() == 6, "the A/B run's repetitions");
    assert!(back[0].instances.iter().any(|i| i.histogram.is_some()));
    // Runs that started at the same time come back in the order they were added.
    let mut store = place.open_fresh();
    let same: Vec<RunRecord> = (0..3).map(|n| small(n, "s", None, "m", "2025-01-01T00:00:00Z")).rev().collect();
    for record in &same {
        store.add(record).expect("adds");
    }
    assert_eq!(store.runs(&Query::default()).expect("runs"), same);
}

fn adding_a_run_twice_finds_it(place: &Place) {
    let mut store = place.open_fresh();
    let record = realistic().remove(0);
    let Added::New { id } = store.add(&record).expect("adds") else { panic!("the first add is new") };
    assert_eq!(store.add(&record).expect("adds again"), Added::AlreadyThere { id });
    let mut relabelled = record.clone();
    relabelled.label = Some("again".to_owned());
    assert_eq!(store.add(&relabelled).expect("adds again"), Added::AlreadyThere { id }, "the run_id is the identity");
    assert_eq!(store.runs(&Query::default()).expect("runs"), vec![record]);
}

fn queries_filter_and_limit(place: &Place) {
    let mut store = place.open_fresh();
    let r = [
        small(1, "a", Some("main"), "m1", "2025-01-01T00:00:00Z"),
        small(2, "a", Some("dev"), "m1", "2025-01-02T00:00:00Z"),
        small(3, "b", Some("main"), "m2", "2025-01-03T00:00:00Z"),
        small(4, "a", Some("main"), "m2", "2025-01-04T00:00:00Z"),
        // Later than the next one, which is added after it; as text "...00.5Z" sorts before "...00Z".
        small(5, "a", None, "m1", "2025-01-05T00:00:00.5Z"),
        small(6, "a", Some("main"), "m1", "2025-01-05T00:00:00Z"),
    ];
    for record in &r {
        store.add(record).expect("adds");
    }
    let ids = |store: &mut Store, q: Query| -> Vec<String> {
        store.runs(&q).expect("runs").iter().map(|r| r.commit.clone().unwrap_or_default()).collect()
    };
    let s = |v: &str| Some(v.to_owned());
    assert_eq!(ids(&mut store, Query::default()), ["c1", "c2", "c3", "c4", "c6", "c5"]);
    assert_eq!(ids(&mut store, Query { spec: s("a"), ..Query::default() }), ["c1", "c2", "c4", "c6", "c5"]);
    assert_eq!(ids(&mut store, Query { branch: s("main"), ..Query::default() }), ["c1", "c3", "c4", "c6"]);
    assert_eq!(ids(&mut store, Query { machine: s("m2"), ..Query::default() }), ["c3", "c4"]);
    assert_eq!(ids(&mut store, Query { unbranched: true, ..Query::default() }), ["c5"], "the runs on no branch");
    assert_eq!(ids(&mut store, Query::series("a", None, None)), ["c5"]);
    assert_eq!(ids(&mut store, Query::series("a", s("main"), s("m1"))), ["c1", "c6"]);
    assert_eq!(ids(&mut store, Query { since: s("2025-01-03"), ..Query::default() }), ["c3", "c4", "c6", "c5"]);
    assert_eq!(
        ids(&mut store, Query { since: s("2025-01-04T01:00:00+02:00"), ..Query::default() }),
        ["c4", "c6", "c5"]
    );
    assert_eq!(ids(&mut store, Query { limit: Some(2), ..Query::default() }), ["c6", "c5"]);
    assert_eq!(ids(&mut store, Query { limit: Some(0), ..Query::default() }), Vec::<String>::new());
    assert_eq!(ids(&mut store, Query { limit: Some(100), ..Query::default() }).len(), 6);
    let q = Query { spec: s("a"), branch: s("main"), machine: s("m1"), since: None, limit: Some(2), unbranched: false };
    assert_eq!(ids(&mut store, q), ["c1", "c6"]);
    assert_eq!(ids(&mut store, Query { spec: s("nothing"), ..Query::default() }), Vec::<String>::new());
    let e = store.runs(&Query { since: s("last tuesday"), ..Query::default() }).expect_err("not a time");
    assert!(matches!(e, HistoryError::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("`last tuesday` is not an RFC 3339 time"), "{e}");
}

fn export_then_import_is_the_same_history(place: &Place) {
    let mut store = place.open_fresh();
    let mut records = realistic();
    records.extend(
        (0..150).map(|n| small(n, "s", Some("main"), "m", &format!("2025-02-01T00:{:02}:{:02}Z", n / 60, n % 60))),
    );
    for record in &records {
        store.add(record).expect("adds");
    }
    let mut exported = Vec::new();
    assert_eq!(store.export(&mut exported).expect("exports"), records.len(), "more than two pages");
    let text = String::from_utf8(exported.clone()).expect("UTF-8");
    assert_eq!(text.lines().count(), records.len());
    assert_eq!(
        serde_json::from_str::<RunRecord>(text.lines().next().unwrap_or_default()).expect("a record"),
        records[0]
    );

    let mut copy = place.open_fresh();
    let imported = copy.import(&mut Cursor::new(&exported)).expect("imports");
    assert_eq!(imported, Imported { added: records.len(), already_there: 0 });
    assert_eq!(copy.runs(&Query::default()).expect("runs"), records);
    let mut again = Vec::new();
    copy.export(&mut again).expect("exports");
    assert_eq!(again, exported, "the export of the import is the export");
    // Importing again adds nothing; blank lines are skipped.
    let mut with_blanks = b"\n".to_vec();
    with_blanks.extend_from_slice(&exported);
    with_blanks.extend_from_slice(b"\n\n");
    let imported = copy.import(&mut Cursor::new(with_blanks)).expect("imports");
    assert_eq!(imported, Imported { added: 0, already_there: records.len() });
    assert_eq!(copy.runs(&Query::default()).expect("runs").len(), records.len());
}

fn a_bad_line_imports_nothing(place: &Place) {
    let good = |n: usize| serde_json::to_string(&small(n, "s", None, "m", "2025-01-01T00:00:00Z")).expect("JSON");
    let mut bad_metric = small(9, "s", None, "m", "2025-01-01T00:00:00Z");
    bad_metric.instances[0].metrics.insert("p1000".to_owned(), 1.0);
    let mut newer = small(9, "s", None, "m", "2025-01-01T00:00:00Z");
    newer.record_version = RECORD_VERSION + 1;
    let mut bad_time = small(9, "s", None, "m", "2025-01-01T00:00:00Z");
    bad_time.started_at = "yesterday".to_owned();
    let cases = [
        ("{\"record_version\": 1, \"run_id\"".to_owned(), "not a run record"),
        ("[1, 2, 3]".to_owned(), "not a run record"),
        (serde_json::to_string(&bad_metric).expect("JSON"), "`p1000` is not a metric"),
        (serde_json::to_string(&newer).expect("JSON"), "record_version 2 is not one this build knows"),
        (serde_json::to_string(&bad_time).expect("JSON"), "started_at `yesterday` is not an RFC 3339 time"),
        ("\u{0}\u{1}garbage".to_owned(), "not a run record"),
    ];
    for (line3, says) in cases {
        let mut store = place.open_fresh();
        let input = format!("{}\n{}\n{line3}\n{}\n", good(1), good(2), good(4));
        let e = store.import(&mut Cursor::new(input)).expect_err("a bad line");
        assert!(matches!(e, HistoryError::Import { line: 3, .. }), "{e}");
        let message = e.to_string();
        assert!(message.starts_with("line 3: "), "{message}");
        assert!(message.contains(says), "{message} should say {says}");
        assert!(store.runs(&Query::default()).expect("runs").is_empty(), "nothing imported");
    }
    // Not UTF-8.
    let mut store = place.open_fresh();
    let mut input = format!("{}\n{}\n", good(1), good(2)).into_bytes();
    input.extend_from_slice(b"\xff\xfe\n");
    let e = store.import(&mut Cursor::new(input)).expect_err("not UTF-8");
    assert!(e.to_string().starts_with("line 3: not UTF-8"), "{e}");
    assert!(store.runs(&Query::default()).expect("runs").is_empty());
}

const THREADS: usize = 8;
const ADDS: usize = 25;

fn writers_on_threads_lose_nothing(place: &Place) {
    // Every thread opens the new store itself, at once: creating the schema races too.
    let location = place.fresh();
    let barrier = Arc::new(Barrier::new(THREADS));
    let shared = small(99_999, "shared", None, "m", "2025-01-01T00:00:00Z");
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (location, barrier, shared) = (location.clone(), barrier.clone(), shared.clone());
            std::thread::spawn(move || -> Result<bool, HistoryError> {
                barrier.wait();
                let mut store = Store::open(&location)?;
                let mut shared_was_new = false;
                for i in 0..ADDS {
                    let n = t * 1000 + i;
                    let record = small(n, "s", Some("main"), "m", &format!("2025-01-01T00:{:02}:{:02}Z", t, i));
                    assert!(matches!(store.add(&record)?, Added::New { .. }));
                    if i == ADDS / 2 {
                        shared_was_new = matches!(store.add(&shared)?, Added::New { .. });
                    }
                }
                Ok(shared_was_new)
            })
        })
        .collect();
    let mut new_shared = 0;
    for handle in handles {
        if handle.join().expect("a writer thread").expect("a writer's adds") {
            new_shared += 1;
        }
    }
    assert_eq!(new_shared, 1, "one writer added the shared run, the others found it");
    let mut store = Store::open(&location).expect("opens");
    let runs = store.runs(&Query::default()).expect("runs");
    assert_eq!(runs.len(), THREADS * ADDS + 1);
    assert_eq!(store.runs(&Query { spec: Some("s".into()), ..Query::default() }).expect("runs").len(), 200);
}

const PROCESSES: usize = 4;
const PROCESS_ADDS: usize = 50;

/// Not a test on its own: the writer process of `writers_in_processes_lose_nothing`, which runs this test binary
/// again with `LOADGATE_HISTORY_WRITER` set to the store and `LOADGATE_HISTORY_WRITER_ID` to its number.
#[test]
fn writer_process() {
    let (Ok(location), Ok(id)) =
        (std::env::var("LOADGATE_HISTORY_WRITER"), std::env::var("LOADGATE_HISTORY_WRITER_ID"))
    else {
        return;
    };
    let id: usize = id.parse().expect("a writer number");
    let mut store = Store::open(&location).expect("the writer opens the store");
    for i in 0..PROCESS_ADDS {
        let record = small(100_000 + id * 1000 + i, "p", None, "m", &format!("2025-03-01T00:{id:02}:{i:02}Z"));
        assert!(matches!(store.add(&record).expect("the writer adds"), Added::New { .. }));
        // A run every writer adds: one stores it, the others find it.
        store.add(&small(7, "p", None, "m", "2025-03-01T00:00:00Z")).expect("the writer adds the shared run");
    }
}

fn writers_in_processes_lose_nothing(place: &Place) {
    let location = place.fresh();
    let exe: PathBuf = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (0..PROCESSES)
        .map(|id| {
            Command::new(&exe)
                .args(["--exact", "writer_process", "--test-threads=1"])
                .env("LOADGATE_HISTORY_WRITER", &location)
                .env("LOADGATE_HISTORY_WRITER_ID", id.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a writer process starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("a writer process ends");
        assert!(
            out.status.success(),
            "a writer process failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut store = Store::open(&location).expect("opens");
    let runs = store.runs(&Query::default()).expect("runs");
    assert_eq!(runs.len(), PROCESSES * PROCESS_ADDS + 1);
    let mut ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), PROCESSES * PROCESS_ADDS + 1);
}

fn a_store_of_the_first_schema_is_brought_up_to_date_keeping_its_runs(place: &Place) {
    let location = place.fresh();
    let mut store = Store::open(&location).expect("opens");
    let old = small(1, "s", None, "m", "2025-01-01T00:00:00Z");
    store
        .add(&RunRecord { instances: vec![InstanceRecord { profile: None, ..old.instances[0].clone() }], ..old })
        .expect("adds");
    // Back to the first schema: what loadgate wrote before instances kept their profile and runs their design.
    raw(&mut store, "ALTER TABLE runs DROP COLUMN design");
    raw(&mut store, "DELETE FROM loadgate_schema WHERE version = 3");
    raw(&mut store, "ALTER TABLE instances DROP COLUMN profile");
    raw(&mut store, "DELETE FROM loadgate_schema WHERE version = 2");
    drop(store);
    let mut store = Store::open(&location).expect("opens and migrates");
    assert_eq!(store.schema_version().expect("a version"), SCHEMA_VERSION);
    let runs = store.runs(&Query::default()).expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].instances[0].profile, None);
    let profiled = small(2, "s", None, "m", "2025-01-01T00:01:00Z");
    store.add(&profiled).expect("adds");
    let runs = store.runs(&Query::default()).expect("runs");
    assert_eq!(runs[1].instances[0].profile.as_deref(), Some("profiled (cpu from cpu, 2 samples)"));
}

fn a_newer_schema_is_refused_untouched(place: &Place) {
    let location = place.fresh();
    let mut store = Store::open(&location).expect("opens");
    store.add(&small(1, "s", None, "m", "2025-01-01T00:00:00Z")).expect("adds");
    raw(&mut store, "INSERT INTO loadgate_schema (version, written_by) VALUES (99, 'loadgate 9.0.0')");
    drop(store);
    let before = match place {
        Place::Sqlite(_) => std::fs::read(&location).expect("the file"),
        Place::Postgres(_) => Vec::new(),
    };
    let e = Store::open(&location).expect_err("a newer schema");
    assert!(matches!(e, HistoryError::NewerSchema { found: 99, known: SCHEMA_VERSION, .. }), "{e}");
    assert!(e.to_string().contains("schema version 99, newer than this loadgate knows (3)"), "{e}");
    match place {
        Place::Sqlite(_) => assert_eq!(std::fs::read(&location).expect("the file"), before, "the file is unchanged"),
        Place::Postgres(server) => {
            let db = location.rsplit('/').next().unwrap_or_default();
            let versions = server.psql(db, "SELECT version FROM loadgate_schema ORDER BY version").expect("psql");
            assert_eq!(versions.trim(), "1\n2\n3\n99");
            assert_eq!(server.psql(db, "SELECT count(*) FROM runs").expect("psql").trim(), "1");
        }
    }
}

fn a_foreign_database_is_refused(place: &Place) {
    match place {
        Place::Sqlite(dir) => {
            // Not SQLite at all.
            let path = dir.path().join("notes.txt");
            std::fs::write(&path, "these are my notes, not a database; ".repeat(40)).expect("writes");
            let e = Store::open(&path.display().to_string()).expect_err("not a database");
            assert!(matches!(e, HistoryError::NotADatabase { .. }), "{e}");
            assert!(e.to_string().contains("is not a SQLite database"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).expect("reads").len(), 36 * 40, "untouched");
            // SQLite, with someone else's tables.
            let path = dir.path().join("app.db");
            let conn = rusqlite::Connection::open(&path).expect("SQLite");
            conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)").expect("a table");
            drop(conn);
            let e = Store::open(&path.display().to_string()).expect_err("foreign tables");
            assert!(matches!(e, HistoryError::Foreign { .. }), "{e}");
            assert!(e.to_string().contains("not a loadgate history: it has the tables `users`"), "{e}");
            // A directory, or a directory that is not there.
            let e = Store::open(&dir.path().display().to_string()).expect_err("a directory");
            assert!(matches!(e, HistoryError::Open { .. }), "{e}");
            let e = Store::open(&dir.path().join("nowhere/h.db").display().to_string()).expect_err("no directory");
            assert!(e.to_string().contains("does not exist"), "{e}");
        }
        Place::Postgres(server) => {
            // A database with a table of the history's names but no version is someone else's.
            let url = place.fresh();
            let db = url.rsplit('/').next().unwrap_or_default();
            server.psql(db, "CREATE TABLE runs (x INTEGER)").expect("psql");
            let e = Store::open(&url).expect_err("foreign tables");
            assert!(matches!(e, HistoryError::Foreign { .. }), "{e}");
            assert!(e.to_string().contains("`runs`"), "{e}");
            // A shared database with other tables is fine.
            let url = place.fresh();
            let db = url.rsplit('/').next().unwrap_or_default();
            server.psql(db, "CREATE TABLE users (x INTEGER)").expect("psql");
            let mut store = Store::open(&url).expect("opens beside other tables");
            assert_eq!(store.schema_version().expect("a version"), SCHEMA_VERSION);
            // Not a PostgreSQL server.
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
            let port = listener.local_addr().expect("an address").port();
            let serve = std::thread::spawn(move || {
                use std::io::Write as _;
                if let Ok((mut stream, _)) = listener.accept() {
                    let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
                }
            });
            let e = Store::open(&format!("postgres://postgres@127.0.0.1:{port}/x")).expect_err("not PostgreSQL");
            assert!(matches!(e, HistoryError::Open { .. }), "{e}");
            let _ = serve.join();
        }
    }
}

fn damaged_rows_are_errors(place: &Place) {
    let damages = [
        ("UPDATE instances SET matrix = 'not json'", "its matrix is not a list of [name, value] pairs"),
        ("UPDATE metrics SET metric = 'p1000' WHERE metric = 'p99'", "`p1000` is not a metric"),
        ("UPDATE instances SET gate = 7", "gate is neither 0 nor 1"),
        ("UPDATE runs SET record_version = 42", "record_version 42 is not one this build knows"),
        ("UPDATE repetition_metrics SET repetition = 50 WHERE repetition = 1", "a repetition that is not there"),
        ("DELETE FROM instances", "metric p99 of an instance that is not there"),
    ];
    for (damage, says) in damages {
        let mut store = place.open_fresh();
        let record = small(1, "s", None, "m", "2025-01-01T00:00:00Z");
        store.add(&record).expect("adds");
        let sql = format!("{}{damage}", foreign_keys_off(&store));
        raw(&mut store, &sql);
        let e = store.runs(&Query::default()).expect_err(damage);
        assert!(matches!(e, HistoryError::Corrupt { .. }), "{damage}: {e}");
        assert!(e.to_string().contains(says), "{damage}: {e}");
        assert!(e.to_string().contains(&record.run_id), "{e} names the run");
        let e = store.export(&mut Vec::new()).expect_err(damage);
        assert!(matches!(e, HistoryError::Corrupt { .. }), "{damage}: {e}");
    }
}

/// What lets a test damage rows that foreign keys would protect.
fn foreign_keys_off(store: &Store) -> &'static str {
    match store {
        Store::Sqlite(_) => "PRAGMA foreign_keys = OFF; ",
        Store::Postgres(_) => "SET session_replication_role = replica; ",
    }
}

fn passwords_never_show(place: &Place) {
    match place {
        Place::Sqlite(dir) => {
            let path = dir.path().join("h.db").display().to_string();
            assert_eq!(Store::open(&path).expect("opens").describe(), format!("SQLite file {path}"));
        }
        Place::Postgres(server) => {
            let url = place.fresh();
            let with_password = url.replacen("postgres@", "postgres:pw-s3cret-42@", 1);
            // Trust authentication takes any password.
            let store = Store::open(&with_password).expect("opens");
            assert!(!store.describe().contains("s3cret"), "{}", store.describe());
            assert!(!format!("{store:?}").contains("s3cret"));
            // A wrong database: the error shows the URL without the password.
            let wrong = format!("postgres://postgres:pw-s3cret-42@127.0.0.1:{}/no_such_db", server.port());
            let e = Store::open(&wrong).expect_err("no such database");
            let message = e.to_string();
            assert!(!message.contains("s3cret"), "{message}");
            assert!(message.contains("postgres://postgres:***@127.0.0.1"), "{message}");
            assert!(message.contains("no_such_db"), "{message}");
            let e = Store::open("postgres://postgres:pw-s3cret-42@127.0.0.1:1/x?password=pw-s3cret-42")
                .expect_err("nothing listens");
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
    }
}
