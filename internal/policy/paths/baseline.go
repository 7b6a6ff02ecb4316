package paths

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// entry is a baseline pattern with the reason it is there (value-free, fit for a decision message).
type entry struct{ pattern, reason string }

// sensitiveRead is what an agent must not read: secrets and aliases that reach them. Each line says
// why. Deliberately absent:
//   - /etc/passwd, /etc/group: world-readable account lists, no secrets;
//   - /proc/*/cmdline: world-readable, and ps shows it anyway;
//   - /root/**: when the agent runs as root it is the agent's own home (often its workspace); the
//     secrets in it are covered by the ~ patterns, which also match /root;
//   - **/*.pem, **/*.key: public certificates share the extensions; private keys' usual homes are listed;
//   - .env templates (.env.example, .env.sample): they hold no secrets and agents need them.
var sensitiveRead = []entry{
	{"/etc/shadow", "password hashes"},
	{"/etc/shadow-", "password hashes (backup)"},
	{"/etc/gshadow", "group password hashes"},
	{"/etc/gshadow-", "group password hashes (backup)"},
	{"/etc/security/opasswd", "previous password hashes"},
	{"/etc/sudoers", "privilege rules, readable by root only"},
	{"/etc/sudoers.d/**", "privilege rules, readable by root only"},
	{"/etc/ssh/ssh_host_*_key", "SSH host private keys"},
	{"/etc/ssl/private/**", "TLS private keys"},
	{"/etc/pki/tls/private/**", "TLS private keys"},
	{"/etc/letsencrypt/**", "certificate private keys and ACME account keys"},
	{"/etc/kubernetes/**", "cluster admin kubeconfigs and control-plane keys"},
	{"/etc/rancher/**", "k3s and RKE2 admin kubeconfigs and tokens"},
	{"/var/lib/kubelet/**", "kubelet credentials and the secrets mounted into pods"},
	{"/var/run/secrets/**", "service account tokens and container secrets"},
	{"/run/secrets/**", "service account tokens and container secrets"},
	{"/var/lib/cloud/**", "cloud-init user data, which often holds bootstrap secrets"},
	{"/proc/*/environ", "process environments hold API keys and tokens"},
	{"/proc/*/task/*/environ", "process environments hold API keys and tokens"},
	{"/proc/*/mem", "process memory"},
	{"/proc/*/task/*/mem", "process memory"},
	{"/proc/*/root/**", "the whole file system through a process's root link"},
	{"/proc/*/task/*/root/**", "the whole file system through a process's root link"},
	{"/proc/*/cwd/**", "another process's working directory"},
	{"/proc/*/task/*/cwd/**", "another process's working directory"},
	{"/proc/kcore", "kernel memory"},
	{"/dev/mem", "physical memory"},
	{"/dev/kmem", "kernel memory"},
	{"/dev/port", "I/O ports"},
	{"/dev/core", "kernel memory (a link to /proc/kcore)"},
	{"~/.ssh/**", "SSH private keys and configuration"},
	{"~/.aws/**", "AWS credentials"},
	{"~/.azure/**", "Azure credentials"},
	{"~/.config/gcloud/**", "Google Cloud credentials"},
	{"~/.oci/**", "Oracle Cloud API keys"},
	{"~/.kube/**", "Kubernetes credentials"},
	{"~/.docker/config.json", "container registry credentials"},
	{"~/.gnupg/**", "GPG private keys"},
	{"~/.password-store/**", "password store"},
	{"~/.local/share/keyrings/**", "desktop keyring"},
	{"~/.netrc", "HTTP and FTP credentials"},
	{"~/.git-credentials", "Git credentials"},
	{"~/.config/gh/**", "GitHub CLI token"},
	{"~/.pgpass", "PostgreSQL passwords"},
	{"~/.my.cnf", "MySQL passwords"},
	{"~/.npmrc", "npm registry tokens"},
	{"~/.pypirc", "PyPI tokens"},
	{"~/.cargo/credentials", "crates.io token"},
	{"~/.cargo/credentials.toml", "crates.io token"},
	{"~/.terraform.d/credentials.tfrc.json", "Terraform Cloud token"},
	{"~/.vault-token", "Vault token"},
	{"~/.bash_history", "shell history, which often holds pasted secrets"},
	{"~/.zsh_history", "shell history, which often holds pasted secrets"},
	{"**/.env", "dotenv files hold application secrets"},
	{"**/.env.local", "dotenv files hold application secrets"},
	{"**/.env.*.local", "dotenv files hold application secrets"},
	{"**/.env.production", "dotenv files hold application secrets"},
}

// whyLoginShell is the reason a login shell's startup file is sensitive to write.
const whyLoginShell = "shell startup file: runs in every login shell"

// sensitiveWrite is what an agent must not write besides sensitiveRead: the system, persistence
// (code that runs later, as the user or as root) and the agent's own guard rails. Writing to a
// harmless device (HarmlessDevicePatterns) is exempt.
var sensitiveWrite = []entry{
	{"~/.bashrc", "shell startup file: runs in every shell"},
	{"~/.bash_profile", whyLoginShell},
	{"~/.bash_login", whyLoginShell},
	{"~/.bash_logout", "shell file: runs at every logout"},
	{"~/.profile", whyLoginShell},
	{"~/.zshrc", "shell startup file: runs in every shell"},
	{"~/.zshenv", "shell startup file: runs in every shell"},
	{"~/.zprofile", whyLoginShell},
	{"~/.zlogin", whyLoginShell},
	{"~/.zlogout", "shell file: runs at every logout"},
	{"~/.config/fish/**", "shell startup files"},
	{"~/.inputrc", "readline key bindings can run commands"},
	{"~/.vimrc", "editor startup file: runs commands"},
	{"~/.config/nvim/**", "editor startup files: run commands"},
	{"~/.gitconfig", "Git configuration can run commands (hooksPath, fsmonitor, aliases)"},
	{"~/.config/git/**", "Git configuration can run commands (hooksPath, fsmonitor, aliases)"},
	{"**/.git/config", "Git configuration can run commands (hooksPath, fsmonitor, aliases)"},
	{"**/.git/hooks/**", "Git hooks run on the developer's next commit"},
	{"~/.config/systemd/**", "systemd user units: persistence"},
	{"~/.config/autostart/**", "desktop autostart: persistence"},
	{"~/.config/environment.d/**", "session environment: persistence"},
	{"~/.local/bin/**", "often first in PATH: a file here shadows commands"},
	{"~/.docker/**", "Docker CLI configuration and plugins"},
	{"~/.config/pip/**", "pip configuration can redirect package downloads"},
	{"~/.pip/**", "pip configuration can redirect package downloads"},
	{"~/.claude/**", "the agent's own settings and hooks"},
	{"**/.claude/settings.json", "the agent's project settings and hooks"},
	{"**/.claude/settings.local.json", "the agent's project settings and hooks"},
	{"~/.codex/**", "the agent's own settings"},
	{"~/.gemini/**", "the agent's own settings"},
	{"/var/spool/cron/**", "crontabs: persistence"},
	{"/var/spool/at/**", "at jobs: persistence"},
	{"/var/run/docker.sock", "the Docker API is root on the host"},
	{"/run/docker.sock", "the Docker API is root on the host"},
	{"/var/run/containerd/**", "the containerd API is root on the host"},
	{"/run/containerd/**", "the containerd API is root on the host"},
	{"/var/run/crio/**", "the CRI-O API is root on the host"},
	{"/run/crio/**", "the CRI-O API is root on the host"},
	{"/var/run/podman/**", "the Podman API is root on the host"},
	{"/run/podman/**", "the Podman API is root on the host"},
	{"/etc/**", "system configuration"},
	{"/bin/**", "system programs"},
	{"/sbin/**", "system programs"},
	{"/usr/**", "system programs and libraries"},
	{"/lib/**", "system libraries"},
	{"/lib32/**", "system libraries"},
	{"/lib64/**", "system libraries"},
	{"/libx32/**", "system libraries"},
	{"/boot/**", "kernel and boot loader"},
	{"/sys/**", "kernel interfaces"},
	{"/proc/**", "kernel and process interfaces"},
	{"/dev/**", "devices"},
}

// harmlessDevices are the devices an agent may write: sinks, sources and its own streams.
var harmlessDevices = []entry{
	{"/dev/null", "sink"},
	{"/dev/zero", "source"},
	{"/dev/full", "test device"},
	{"/dev/random", "randomness"},
	{"/dev/urandom", "randomness"},
	{"/dev/stdin", "own stream"},
	{"/dev/stdout", "own stream"},
	{"/dev/stderr", "own stream"},
	{"/dev/tty", "own terminal"},
	{"/dev/fd/*", "own file descriptors"},
	{"/dev/shm/**", "shared-memory scratch space, like /tmp"},
}

func patternsOf(lists ...[]entry) []string {
	var out []string
	for _, l := range lists {
		for _, e := range l {
			out = append(out, e.pattern)
		}
	}
	return out
}

// SensitiveReadPatterns returns the read baseline's patterns (a fresh copy).
func SensitiveReadPatterns() []string { return patternsOf(sensitiveRead) }

// SensitiveWritePatterns returns the write baseline's patterns: the read baseline's, then the
// write-only ones (a fresh copy). HarmlessDevicePatterns are exempt from it.
func SensitiveWritePatterns() []string { return patternsOf(sensitiveRead, sensitiveWrite) }

// HarmlessDevicePatterns returns the devices exempt from the write baseline (a fresh copy).
func HarmlessDevicePatterns() []string { return patternsOf(harmlessDevices) }

// compileBaseline compiles entries with their reasons. A pattern that does not compile (a bug the
// tests catch) makes the set match every path: fail closed.
func compileBaseline(lists ...[]entry) (*Set, []error) {
	s := &Set{absBy: map[string][]int32{}}
	var errs []error
	for _, l := range lists {
		for _, e := range l {
			// The baseline names directories with "/**"; its other entries are files, which nothing
			// is below: "/etc/*.conf" must not match "/etc/shadow" through "/etc/shadow/x.conf".
			p, err := compilePattern(e.pattern, !strings.HasSuffix(e.pattern, "/**"))
			if err != nil {
				errs = append(errs, fmt.Errorf("baseline pattern %q: %w", e.pattern, err))
				continue
			}
			p.reason = e.reason
			s.add(p)
		}
	}
	if len(errs) > 0 {
		s = &Set{absBy: map[string][]int32{}}
		s.add(unanalysable)
	}
	s.index()
	return s, errs
}

var (
	baselineRead  = sync.OnceValues(func() (*Set, []error) { return compileBaseline(sensitiveRead) })
	harmless      = sync.OnceValues(func() (*Set, []error) { return compileBaseline(harmlessDevices) })
	baselineWrite = sync.OnceValues(func() (*Set, []error) {
		s, errs := compileBaseline(sensitiveRead, sensitiveWrite)
		h, herrs := harmless()
		s.exempt = h
		return s, slices.Concat(errs, herrs)
	})
)

// BaselineRead returns the compiled read baseline (SensitiveReadPatterns). It is built once and
// immutable.
func BaselineRead() *Set { s, _ := baselineRead(); return s }

// BaselineWrite returns the compiled write baseline (SensitiveWritePatterns): its Match and MatchGlob
// never report a path that is certainly a harmless device. It is built once and immutable.
func BaselineWrite() *Set { s, _ := baselineWrite(); return s }

// IsHarmlessDevice reports whether a path is certainly one of the harmless devices
// (HarmlessDevicePatterns): /dev/null, /dev/stdout, /dev/fd/N, ...
func IsHarmlessDevice(path string) bool {
	s, _ := harmless()
	_, ok := s.Covers(path)
	return ok
}
