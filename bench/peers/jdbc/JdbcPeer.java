// pgpipe-bench's Java peer: pgjdbc behind a HikariCP pool of `pool`
// connections and `concurrency` threads, one per in-flight query (the
// blocking model: a thread borrows a connection for each query's round trip).
//
// It measures the way pgpipe-bench's own children do (bench/measurement.hpp,
// docs/benchmarks.md "Beside other clients") and writes the same one-line
// result ("R key=value ...") on stdout, so pgpipe-bench runs it as a driver.
// The connection comes from the PG* environment variables (the password
// never on the command line).

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

public final class JdbcPeer {
  static final String SQL = "select ten, so_luong from san_pham where ma = ?";
  static final int ROWS = 100_000;

  static final int WARMUP = 0, WINDOW = 1, STOP = 2;
  static volatile int phase = WARMUP;

  /** One caller's counts; read by the main thread after join(). */
  static final class Tally {
    long queries, missingRow, queryError, checksum;
    long firstOkNanos = -1;
    int[] latenciesUs = new int[1024];
    int n;

    void record(long us) {
      if (n == latenciesUs.length) latenciesUs = Arrays.copyOf(latenciesUs, n * 2);
      latenciesUs[n++] = (int) Math.min(us, Integer.MAX_VALUE);
    }
  }

  static String env(String k, String fallback) {
    String v = System.getenv(k);
    return v == null || v.isEmpty() ? fallback : v;
  }

  /** This process's user + system CPU seconds from /proc/self/stat (utime, stime). */
  static double cpuSeconds(double clkTck) throws Exception {
    String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")));
    // The command name (field 2) may hold spaces: count from its closing ')'.
    String[] f = stat.substring(stat.lastIndexOf(')') + 1).trim().split("\\s+");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / clkTck;
  }

  /** "VmRSS" (kB) or "Threads" of /proc/self/status: the process at the window's end. */
  static long statusField(String name) throws Exception {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith(name + ":")) return Long.parseLong(line.substring(name.length() + 1).trim().split("\\s+")[0]);
    }
    return 0;
  }

  static double percentile(int[] sorted, double q) {
    if (sorted.length == 0) return 0;
    int rank = Math.max(1, Math.min(sorted.length, (int) Math.ceil(q * sorted.length)));
    return sorted[rank - 1] / 1000.0;
  }

  /** "SP%06d" without String.format's parser on every query (the other peers format a key cheaply too). */
  static String key(int n) {
    char[] k = {'S', 'P', '0', '0', '0', '0', '0', '0'};
    for (int i = k.length - 1; n > 0 && i >= 2; --i, n /= 10) k[i] = (char) ('0' + n % 10);
    return new String(k);
  }

  static void caller(HikariDataSource ds, Tally t) {
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    while (phase != STOP) {
      String key = key(1 + rnd.nextInt(ROWS));
      long started = System.nanoTime();
      int outcome;  // 0 ok, 1 missing row, 2 error
      try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(SQL)) {
        ps.setString(1, key);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            t.checksum += rs.getString(1).length() + rs.getInt(2);
            outcome = 0;
          } else {
            outcome = 1;
          }
        }
      } catch (SQLException e) {
        outcome = 2;
      }
      long done = System.nanoTime();
      if (outcome == 0 && t.firstOkNanos < 0) t.firstOkNanos = done;
      if (phase == WINDOW) {
        if (outcome == 0) {
          ++t.queries;
          t.record((done - started) / 1000);
        } else if (outcome == 1) {
          ++t.missingRow;
        } else {
          ++t.queryError;
        }
      }
    }
  }

  public static void main(String[] argv) throws Exception {
    int pool = 20, concurrency = 500;
    double warmup = 2, duration = 10, clkTck = 100;
    for (int i = 0; i < argv.length; i += 2) {
      if (i + 1 >= argv.length) fail(argv[i] + " needs a value");
      String v = argv[i + 1];
      try {
        switch (argv[i]) {
          case "--pool": pool = Integer.parseInt(v); break;
          case "--concurrency": concurrency = Integer.parseInt(v); break;
          case "--warmup": warmup = Double.parseDouble(v); break;
          case "--duration": duration = Double.parseDouble(v); break;
          case "--clk-tck": clkTck = Double.parseDouble(v); break;
          default: fail("unknown option '" + argv[i] + "'");
        }
      } catch (NumberFormatException e) {
        fail(argv[i] + ": not a number: '" + v + "'");
      }
    }
    if (pool < 1 || concurrency < 1 || warmup < 0 || duration <= 0 || clkTck <= 0) {
      fail("--pool, --concurrency >= 1, --warmup >= 0, --duration and --clk-tck > 0");
    }

    long t0 = System.nanoTime();
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl("jdbc:postgresql://" + env("PGHOST", env("PGHOSTADDR", "127.0.0.1")) + ":" + env("PGPORT", "5432") + "/"
        + env("PGDATABASE", "postgres"));
    cfg.setUsername(env("PGUSER", "postgres"));
    cfg.setPassword(System.getenv("PGPASSWORD"));
    cfg.addDataSourceProperty("ApplicationName", env("PGAPPNAME", "pgpipe-bench-jdbc"));
    cfg.setMaximumPoolSize(pool);
    cfg.setMinimumIdle(pool);  // the whole pool up front, as every driver opens it
    cfg.setConnectionTimeout(30_000);
    final HikariDataSource ds = new HikariDataSource(cfg);
    // Every connection open before the first caller starts: hold `pool` of
    // them at once (each getConnection waits for the pool to grow), then
    // give them back.
    List<Connection> held = new ArrayList<>();
    for (int i = 0; i < pool; ++i) held.add(ds.getConnection());
    for (Connection c : held) c.close();

    Tally[] tallies = new Tally[concurrency];
    Thread[] threads = new Thread[concurrency];
    for (int i = 0; i < concurrency; ++i) {
      final Tally t = tallies[i] = new Tally();
      threads[i] = new Thread(() -> caller(ds, t), "caller-" + i);
      threads[i].start();
    }
    // The main thread only paces the window; the callers run on their own threads.
    Thread.sleep((long) (warmup * 1000));
    double cpuBegin = cpuSeconds(clkTck);
    phase = WINDOW;
    Thread.sleep((long) (duration * 1000));
    phase = STOP;
    double windowCpu = cpuSeconds(clkTck) - cpuBegin;
    double rssEndMb = statusField("VmRSS") / 1024.0;
    long threadsEnd = statusField("Threads");
    for (Thread th : threads) th.join();

    long queries = 0, missing = 0, errors = 0, checksum = 0, firstOk = -1;
    int total = 0;
    for (Tally t : tallies) total += t.n;
    int[] all = new int[total];
    int at = 0;
    for (Tally t : tallies) {
      queries += t.queries;
      missing += t.missingRow;
      errors += t.queryError;
      checksum += t.checksum;
      if (t.firstOkNanos >= 0 && (firstOk < 0 || t.firstOkNanos < firstOk)) firstOk = t.firstOkNanos;
      System.arraycopy(t.latenciesUs, 0, all, at, t.n);
      at += t.n;
    }
    Arrays.sort(all);
    StringBuilder line = new StringBuilder("R driver=jdbc");
    line.append(" pool=").append(pool).append(" concurrency=").append(concurrency)
        .append(" duration_s=").append(duration).append(" queries=").append(queries)
        .append(" qps=").append(queries / duration)
        .append(" p50_ms=").append(percentile(all, 0.50)).append(" p95_ms=").append(percentile(all, 0.95))
        .append(" p99_ms=").append(percentile(all, 0.99)).append(" max_ms=").append(percentile(all, 1.0))
        .append(" errors=").append(missing + errors)
        .append(" startup_ms=").append(firstOk < 0 ? -1 : (firstOk - t0) / 1e6)
        .append(" window_cpu_s=").append(windowCpu).append(" rss_end_mb=").append(rssEndMb)
        .append(" threads_end=").append(threadsEnd).append(" ok=1");
    if (missing > 0) line.append(" err.missing_row=").append(missing);
    if (errors > 0) line.append(" err.query_error=").append(errors);
    System.out.println(line);
    System.err.println("jdbc peer: checksum " + checksum);
    ds.close();
  }

  static void fail(String why) {
    System.err.println("jdbc peer: " + why);
    System.exit(2);
  }
}
