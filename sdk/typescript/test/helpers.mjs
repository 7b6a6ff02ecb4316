// Test fixtures shared by the suites: a real `tollgate serve` on loopback, and a sandbox directory
// in which the agents' `bash` tool really runs commands (so that "the dangerous call never ran" is
// checked on the file system, not on a mock).
import { spawn, execFileSync, execFile } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root (sdk/typescript/test → ../../..). */
export const repoRoot = resolve(here, "..", "..", "..");

/** The sample policies every suite decides with. */
export const samples = join(repoRoot, "config", "samples");

/** The passport of the samples that may run shell commands. */
export const PASSPORT = "coding-agent";

/**
 * Starts `tollgate serve -f <paths> --bind-address 127.0.0.1:0 --watch=false [extra]` and resolves to
 * {url, stop, stderr} once it prints its address. It rejects, with the server's stderr, when the
 * binary is missing, the process exits, or no address is printed within 20 s: a suite that needs
 * the server fails loudly rather than skipping.
 */
export async function startTollgate({ paths = [samples], extra = [] } = {}) {
  const bin = process.env.TOLLGATE_BIN || join(repoRoot, "bin", "tollgate");
  if (!existsSync(bin)) {
    throw new Error(`tollgate binary not found at ${bin}: build it with \`go build -o bin/tollgate ./cmd/tollgate\` (hack/test-typescript.sh does)`);
  }
  const args = ["serve", ...paths.flatMap((p) => ["-f", p]), "--bind-address", "127.0.0.1:0", "--watch=false", ...extra];
  const child = spawn(bin, args, { cwd: repoRoot, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tollgate serve printed no address within 20s; stderr:\n${stderr}`));
    }, 20_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const m = /decision API on (http:\/\/\S+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`starting ${bin}: ${err.message}`));
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`tollgate serve exited (code ${code}, signal ${signal}) before serving; stderr:\n${stderr}`));
    });
  });
  return {
    url,
    stderr: () => stderr,
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once("exit", () => done());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5000).unref();
      }),
  };
}

/**
 * Makes a sandbox directory holding `victim/keep.txt` and a git repository with one commit
 * ("initial commit"), and a `run(command)` that really runs the command there with bash, recording
 * every command (and env) it was given in `ran`.
 */
export function makeSandbox() {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-sdk-ts-"));
  mkdirSync(join(dir, "victim"));
  writeFileSync(join(dir, "victim", "keep.txt"), "must survive\n");
  const gitEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: "Tollgate Test",
    GIT_AUTHOR_EMAIL: "test@tollgate.invalid",
    GIT_COMMITTER_NAME: "Tollgate Test",
    GIT_COMMITTER_EMAIL: "test@tollgate.invalid",
    GIT_CONFIG_NOSYSTEM: "1",
    HOME: dir,
  };
  execFileSync("git", ["init", "-q", dir], { env: gitEnv });
  execFileSync("git", ["-C", dir, "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "initial commit"], { env: gitEnv });
  const ran = [];
  return {
    dir,
    ran,
    victim: join(dir, "victim", "keep.txt"),
    /** Runs command with bash in the sandbox; resolves to its stdout and stderr. */
    run(command, env) {
      ran.push(env === undefined ? { command } : { command, env });
      return new Promise((done) => {
        execFile("bash", ["-c", command], { cwd: dir, env: { ...gitEnv, PAGER: "cat" }, timeout: 10_000 }, (err, stdout, stderr) => {
          done(err ? `exit ${err.code}: ${stdout}${stderr}` : `${stdout}${stderr}`);
        });
      });
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The three calls every adapter test makes: one Tollgate denies, one it allows, one it rewrites. */
export const CALLS = {
  dangerous: { command: "rm -rf victim" },
  benign: { command: "ls" },
  rewritten: { command: "git log -3 --format=%s", env: { PAGER: "less" } },
  rewrittenTo: "git --no-pager log -3 --format=%s",
};

/** Polls cond every 20 ms until it is truthy or ms pass; resolves to its last value. */
export async function waitFor(cond, ms = 3000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = cond();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The decision-log records (`--decision-log`) in a server's stderr. */
export function decisionLog(server) {
  return server
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
}
