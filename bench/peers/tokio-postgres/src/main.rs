// pgpipe-bench's Rust peer: tokio-postgres 0.7 with `pool` connections and
// `concurrency` logical callers in a closed loop, spread round-robin over the
// connections. tokio-postgres pipelines: every caller's `query_opt` future on
// a shared Client goes to the connection task, which writes it at once, so
// a connection carries concurrency / pool queries in flight.
//
// It measures the way pgpipe-bench's own children do (bench/measurement.hpp,
// docs/benchmarks.md "Beside other clients") and writes the same one-line
// result ("R key=value ...") on stdout, so pgpipe-bench runs it as a driver.
// The connection comes from the PG* environment variables (the password
// never on the command line).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, Config, NoTls, Statement};

const SQL: &str = "select ten, so_luong from san_pham where ma = $1";
const ROWS: u64 = 100_000;

const WARMUP: u8 = 0;
const WINDOW: u8 = 1;
const STOP: u8 = 2;

struct Args {
    pool: usize,
    concurrency: usize,
    warmup_s: f64,
    duration_s: f64,
    clk_tck: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { pool: 20, concurrency: 500, warmup_s: 2.0, duration_s: 10.0, clk_tck: 100.0 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = argv.get(i + 1).ok_or_else(|| format!("{} needs a value", argv[i]))?;
        let bad = |what: &str| format!("{}: not {}: '{}'", argv[i], what, value);
        match argv[i].as_str() {
            "--pool" => a.pool = value.parse().map_err(|_| bad("a count"))?,
            "--concurrency" => a.concurrency = value.parse().map_err(|_| bad("a count"))?,
            "--warmup" => a.warmup_s = value.parse().map_err(|_| bad("seconds"))?,
            "--duration" => a.duration_s = value.parse().map_err(|_| bad("seconds"))?,
            "--clk-tck" => a.clk_tck = value.parse().map_err(|_| bad("ticks per second"))?,
            other => return Err(format!("unknown option '{}'", other)),
        }
        i += 2;
    }
    if a.pool == 0 || a.concurrency == 0 {
        return Err("--pool and --concurrency must be at least 1".into());
    }
    if !(a.warmup_s >= 0.0 && a.duration_s > 0.0 && a.clk_tck > 0.0) {
        return Err("--warmup must be >= 0, --duration and --clk-tck > 0".into());
    }
    Ok(a)
}

/// This process's user + system CPU seconds, from /proc/self/stat (utime and
/// stime, fields 14 and 15), as pgpipe-bench reads its own children.
fn cpu_seconds(clk_tck: f64) -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("reading /proc/self/stat");
    // The command name (field 2) may hold spaces: count from its closing ')'.
    let rest = &stat[stat.rfind(')').expect("no ')' in /proc/self/stat") + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / clk_tck
}

/// (VmRSS in MB, Threads) from /proc/self/status: the process at the
/// window's end, as pgpipe-bench's own children report it.
fn status_now() -> (f64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    (field("VmRSS:") as f64 / 1024.0, field("Threads:"))
}

fn config_from_env() -> Config {
    let mut c = Config::new();
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    c.host(&var("PGHOST").or_else(|| var("PGHOSTADDR")).unwrap_or_else(|| "127.0.0.1".into()));
    c.port(var("PGPORT").and_then(|p| p.parse().ok()).unwrap_or(5432));
    if let Some(u) = var("PGUSER") {
        c.user(&u);
    }
    if let Some(p) = var("PGPASSWORD") {
        c.password(p);
    }
    if let Some(d) = var("PGDATABASE") {
        c.dbname(&d);
    }
    c.application_name(&var("PGAPPNAME").unwrap_or_else(|| "pgpipe-bench-tokio-postgres".into()));
    c
}

#[derive(Default)]
struct Tally {
    queries: u64,
    missing_row: u64,
    query_error: u64,
    latencies_us: Vec<u32>,
    first_ok: Option<Instant>,
    checksum: u64, // keeps the row reads observable
}

async fn caller(client: Arc<Client>, stmt: Statement, phase: Arc<AtomicU8>, mut seed: u64) -> Tally {
    let mut t = Tally::default();
    loop {
        if phase.load(Ordering::Relaxed) == STOP {
            return t;
        }
        // xorshift64: a uniform key without a crate.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let key = format!("SP{:06}", 1 + seed % ROWS);
        let started = Instant::now();
        let outcome = client.query_opt(&stmt, &[&key]).await;
        let done = Instant::now();
        let ok = match outcome {
            Ok(Some(row)) => match (row.try_get::<_, &str>(0), row.try_get::<_, i32>(1)) {
                (Ok(ten), Ok(so_luong)) => {
                    t.checksum = t.checksum.wrapping_add(ten.len() as u64 + so_luong as u64);
                    Ok(())
                }
                _ => Err(false),
            },
            Ok(None) => Err(true),
            Err(_) => Err(false),
        };
        if ok.is_ok() && t.first_ok.is_none() {
            t.first_ok = Some(done);
        }
        if phase.load(Ordering::Relaxed) == WINDOW {
            match ok {
                Ok(()) => {
                    t.queries += 1;
                    t.latencies_us.push((done - started).as_micros().min(u32::MAX as u128) as u32);
                }
                Err(true) => t.missing_row += 1,
                Err(false) => t.query_error += 1,
            }
        }
    }
}

async fn open(cfg: Config) -> Result<(Arc<Client>, Statement), tokio_postgres::Error> {
    let (client, connection) = cfg.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("tokio-postgres peer: connection: {}", e);
        }
    });
    let stmt = client.prepare(SQL).await?;
    Ok((Arc::new(client), stmt))
}

fn percentile(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1000.0
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tokio-postgres peer: {}", e);
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let t0 = Instant::now();
    let cfg = config_from_env();
    // Every connection opens before the first caller starts (as pgbench and
    // pgpipe-bench's drivers do), so the warm-up starts with the callers.
    let conns = rt.block_on(async {
        let opening: Vec<_> = (0..args.pool).map(|_| tokio::spawn(open(cfg.clone()))).collect();
        let mut conns = Vec::with_capacity(args.pool);
        for h in opening {
            conns.push(h.await.expect("connect task")?);
        }
        Ok::<_, tokio_postgres::Error>(conns)
    });
    let conns = match conns {
        Ok(c) => c,
        Err(e) => {
            // Not the conninfo: tokio-postgres's errors do not carry the password.
            println!("R driver=tokio-postgres pool={} concurrency={} ok=0 failure={}", args.pool, args.concurrency,
                     e.to_string().replace(|c: char| c.is_whitespace() || c == '%' || c == '=', "_"));
            std::process::exit(1);
        }
    };
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let callers: Vec<_> = (0..args.concurrency)
        .map(|i| {
            let (client, stmt) = &conns[i % args.pool];
            let seed = 0x9E37_79B9_7F4A_7C15u64 ^ ((i as u64 + 1) * 0xBF58_476D_1CE4_E5B9);
            rt.spawn(caller(client.clone(), stmt.clone(), phase.clone(), seed))
        })
        .collect();

    // The main thread only paces the window; the callers run on tokio's workers.
    std::thread::sleep(Duration::from_secs_f64(args.warmup_s));
    let cpu_begin = cpu_seconds(args.clk_tck);
    phase.store(WINDOW, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs_f64(args.duration_s));
    phase.store(STOP, Ordering::Relaxed);
    let window_cpu_s = cpu_seconds(args.clk_tck) - cpu_begin;
    let (rss_end_mb, threads_end) = status_now();

    let mut all = Tally::default();
    rt.block_on(async {
        for h in callers {
            let t = h.await.expect("caller task");
            all.queries += t.queries;
            all.missing_row += t.missing_row;
            all.query_error += t.query_error;
            all.latencies_us.extend_from_slice(&t.latencies_us);
            all.checksum = all.checksum.wrapping_add(t.checksum);
            all.first_ok = match (all.first_ok, t.first_ok) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    });
    all.latencies_us.sort_unstable();
    let l = &all.latencies_us;
    let startup_ms = all.first_ok.map_or(-1.0, |f| (f - t0).as_secs_f64() * 1000.0);
    let mut line = format!(
        "R driver=tokio-postgres pool={} concurrency={} duration_s={} queries={} qps={} p50_ms={} p95_ms={} \
         p99_ms={} max_ms={} errors={} startup_ms={} window_cpu_s={} rss_end_mb={} threads_end={} ok=1",
        args.pool, args.concurrency, args.duration_s, all.queries, all.queries as f64 / args.duration_s,
        percentile(l, 0.50), percentile(l, 0.95), percentile(l, 0.99), percentile(l, 1.0),
        all.missing_row + all.query_error, startup_ms, window_cpu_s, rss_end_mb, threads_end);
    if all.missing_row > 0 {
        line += &format!(" err.missing_row={}", all.missing_row);
    }
    if all.query_error > 0 {
        line += &format!(" err.query_error={}", all.query_error);
    }
    println!("{}", line);
    eprintln!("tokio-postgres peer: checksum {}", all.checksum);
    drop(conns);
    rt.shutdown_timeout(Duration::from_secs(5));
}
