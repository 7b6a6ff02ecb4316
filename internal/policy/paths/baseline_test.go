package paths

import (
	"slices"
	"testing"
)

func TestBaselineCompiles(t *testing.T) {
	if _, errs := baselineRead(); len(errs) > 0 {
		t.Fatalf("read baseline: %v", errs)
	}
	if _, errs := baselineWrite(); len(errs) > 0 {
		t.Fatalf("write baseline: %v", errs)
	}
	read, write := SensitiveReadPatterns(), SensitiveWritePatterns()
	if BaselineRead().Len() != len(read) || BaselineWrite().Len() != len(write) {
		t.Fatalf("Len() = %d, %d; want %d, %d", BaselineRead().Len(), BaselineWrite().Len(), len(read), len(write))
	}
	for _, p := range read {
		if !slices.Contains(write, p) {
			t.Errorf("%q is in the read baseline but not the write baseline", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range write {
		if seen[p] {
			t.Errorf("%q listed twice", p)
		}
		seen[p] = true
	}
	for _, s := range []*Set{BaselineRead(), BaselineWrite()} {
		for _, p := range s.pats {
			if p.Reason() == "" {
				t.Errorf("%q has no reason", p)
			}
		}
	}
	// The lists are copies.
	read[0] = "/tmp/**"
	if SensitiveReadPatterns()[0] == "/tmp/**" {
		t.Error("SensitiveReadPatterns returned shared storage")
	}
	// A baseline that does not compile matches everything.
	broken, errs := compileBaseline([]entry{{"/etc/[", "bad"}})
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	if _, ok := broken.Match("/tmp/x"); !ok {
		t.Error("a broken baseline must fail closed")
	}
}

func TestBaselineRead(t *testing.T) {
	secrets := []string{
		"/etc/shadow", "/etc//shadow", "/etc/./shadow", "/tmp/../etc/shadow", "/etc/shadow/", "/etc/gshadow",
		"/etc/shadow-", "/etc/sudoers", "/etc/sudoers.d/90-cloud-init-users", "/etc/ssh/ssh_host_rsa_key",
		"~/.ssh/id_rsa", "~/.ssh/../.ssh/id_rsa", "$HOME/.ssh", "${HOME}/.ssh/id_ed25519", "/root/.ssh/id_rsa",
		"/home/alice/.ssh/id_rsa", "~alice/.ssh/authorized_keys", "../../../../etc/shadow", "../.ssh/id_rsa",
		"/proc/self/environ", "/proc/1/environ", "/proc/self/task/1/environ", "/proc/thread-self/environ",
		"/proc/thread-self/../../environ", "/proc/self/root/etc/shadow", "/proc/1/root/root/.aws/credentials",
		"/var/run/../etc/shadow", "/var/run/secrets/kubernetes.io/serviceaccount/token",
		"/run/secrets/kubernetes.io/serviceaccount/token", "/var/lock/../secrets/db", "/proc/self/mem",
		"/proc/kcore", "/dev/mem", "~/.aws/credentials", "/root/.aws/config", "~/.config/gcloud/credentials.db",
		"~/.kube/config", "~/.docker/config.json", "~/.gnupg/private-keys-v1.d/x.key", "~/.netrc",
		"~/.git-credentials", "~/.pgpass", "~/.npmrc", "~/.pypirc", "~/.vault-token", "/etc/kubernetes/admin.conf",
		"/var/lib/kubelet/pods/x/volumes/kubernetes.io~secret/token", "/workspace/.env", ".env", "app/.env.local",
		"/workspace/.env.production", "~/.config/gh/hosts.yml", "/etc/ssl/private/server.key",
	}
	for _, p := range secrets {
		if m, ok := BaselineRead().Match(p); !ok {
			t.Errorf("BaselineRead().Match(%q) = false", p)
		} else if m.Reason() == "" {
			t.Errorf("%q matched %q without a reason", p, m)
		}
	}
	benign := []string{
		"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/os-release", "docs/sudoers-guide.md", "/tmp/shadow",
		"~/.sshrc", "/workspace/etc/shadow", "etc/shadow", "/workspace/.env.example", "/workspace/.envrc",
		"/proc/self/status", "/proc/1/cmdline", "/proc/cpuinfo", "/root/project/main.go", "~/.bashrc",
		"/home/alice/project/x.go", "/workspace/src/ssh/keys.go", "/etc/ssh/ssh_host_rsa_key.pub",
		"/etc/ssh/sshd_config", "/var/log/syslog", "/dev/null", "/proc/self/fd/1", "/etc/shadow.md",
	}
	for _, p := range benign {
		if m, ok := BaselineRead().Match(p); ok {
			t.Errorf("BaselineRead().Match(%q) = %q, want no match", p, m)
		}
	}
}

func TestBaselineWrite(t *testing.T) {
	blocked := []string{
		"/etc/hosts", "/etc/passwd", "/etc/cron.d/job", "/etc/crontab", "/usr/bin/ls", "/bin/sh", "/lib/x.so",
		"/boot/vmlinuz", "/sys/kernel/x", "/proc/sys/kernel/core_pattern", "/dev/sda", "/dev/tcp/1.2.3.4/80",
		"~/.bashrc", "/root/.bashrc", "/home/bob/.zshrc", "$HOME/.profile", "~/.config/fish/config.fish",
		"/var/spool/cron/crontabs/root", "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
		"~/.config/systemd/user/x.service", "~/.local/bin/ls", "/workspace/.git/hooks/pre-commit",
		"/workspace/.git/config", "~/.gitconfig", "~/.claude/settings.json", "/workspace/.claude/settings.json",
		"~/.ssh/authorized_keys", "/etc/shadow", "/dev/null/../sda", "/dev/./sda",
	}
	for _, p := range blocked {
		if _, ok := BaselineWrite().Match(p); !ok {
			t.Errorf("BaselineWrite().Match(%q) = false", p)
		}
	}
	allowed := []string{
		"/dev/null", "/dev/./null", "/dev/stdout", "/dev/stderr", "/dev/fd/2", "/dev/tty", "/dev/shm/x",
		"/tmp/x", "/workspace/main.go", "~/project/x", "/var/tmp/x", "/home/alice/notes.txt", ".env.example",
		"/workspace/.github/workflows/ci.yml", "/workspace/.claude/commands/x.md", "/root/project/x",
	}
	for _, p := range allowed {
		if m, ok := BaselineWrite().Match(p); ok {
			t.Errorf("BaselineWrite().Match(%q) = %q, want no match", p, m)
		}
	}
}

func TestIsHarmlessDevice(t *testing.T) {
	for p, want := range map[string]bool{
		"/dev/null": true, "/dev/./null": true, "//dev/null": true, "/dev/fd/1": true, "/dev/urandom": true,
		"/dev/sda": false, "/dev/null/../sda": false, "../null": false, "null": false, "/dev/fd/1/x": false,
		"": false, "/dev/mem": false,
	} {
		if got := IsHarmlessDevice(p); got != want {
			t.Errorf("IsHarmlessDevice(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestBaselineGlobs(t *testing.T) {
	// want: GlobDynamic, GlobShell, GlobShellNoDot
	read := []struct {
		glob string
		want [3]bool
	}{
		{"/etc/sha*", [3]bool{true, true, true}},
		{"/etc/shado?", [3]bool{true, true, true}},
		{"/e*/shadow", [3]bool{true, true, true}},
		{"/etc/*", [3]bool{true, true, true}},
		{"/*/*dow", [3]bool{true, true, true}},
		{"*", [3]bool{true, true, false}}, // a shell "*" is one relative name: ".env" with dotglob
		{"~/.ss?/id_*", [3]bool{true, true, true}},
		{"~/*/id_rsa", [3]bool{true, true, false}},
		{"/etc/[s]hadow", [3]bool{true, true, true}},
		{"/proc/*/environ", [3]bool{true, true, true}},
		{"/proc/*/env*", [3]bool{true, true, true}},
		{"/home/*/.aws/*", [3]bool{true, true, true}},
		{"$HOME/.kube/*", [3]bool{true, true, true}},
		{"/p*/shadow", [3]bool{true, false, false}},
		{"/**/shadow", [3]bool{true, true, true}},
		{"/etc/{shadow,passwd}", [3]bool{true, true, true}},
		{"/workspace/*", [3]bool{true, true, false}}, // "/workspace/.env"
		{"/workspace/*/*", [3]bool{true, true, false}},
		{"../*", [3]bool{true, true, true}},              // "/etc/shadow" from /etc/x
		{"/etc/*.conf", [3]bool{true, false, false}},     // dynamic: "/etc/sudoers.d/x.conf"
		{"/etc/*release*", [3]bool{true, true, false}},   // ".env.release.local"
		{"/proc/*/status", [3]bool{true, false, false}},  // dynamic: "/proc/1/root/x/status"
		{"/usr/share/doc/*", [3]bool{true, true, false}}, // "/usr/share/doc/.env"
		{"/tmp/*.log", [3]bool{false, false, false}},
		{"/workspace/*.go", [3]bool{false, false, false}},
		{"/etc/host?", [3]bool{false, false, false}},
		{"src/*.ts", [3]bool{false, false, false}},
	}
	modes := [3]GlobMode{GlobDynamic, GlobShell, GlobShellNoDot}
	for _, tc := range read {
		for i, m := range modes {
			if _, got := BaselineRead().MatchGlobMode(tc.glob, m); got != tc.want[i] {
				t.Errorf("BaselineRead().MatchGlobMode(%q, %d) = %v, want %v", tc.glob, m, got, tc.want[i])
			}
		}
		if _, got := BaselineRead().MatchGlob(tc.glob); got != tc.want[0] {
			t.Errorf("MatchGlob(%q) differs from GlobDynamic", tc.glob)
		}
	}
	write := []struct {
		glob string
		want [3]bool
	}{
		{"/etc/*", [3]bool{true, true, true}},
		{"/usr/local/bin/*", [3]bool{true, true, true}},
		{"~/.*rc", [3]bool{true, true, true}},
		{"/dev/sd?", [3]bool{true, true, true}},
		{"/dev/nul?", [3]bool{true, true, true}}, // exemptions apply to plain paths only
		{"/dev/null", [3]bool{false, false, false}},
		{"/tmp/*.log", [3]bool{true, false, false}},       // dynamic: "/tmp/x/.git/hooks/y.log"
		{"/workspace/**/*.go", [3]bool{true, true, true}}, // globstar may enter .git
		{"/workspace/src/*.go", [3]bool{true, false, false}},
	}
	for _, tc := range write {
		for i, m := range modes {
			if _, got := BaselineWrite().MatchGlobMode(tc.glob, m); got != tc.want[i] {
				t.Errorf("BaselineWrite().MatchGlobMode(%q, %d) = %v, want %v", tc.glob, m, got, tc.want[i])
			}
		}
	}
}
