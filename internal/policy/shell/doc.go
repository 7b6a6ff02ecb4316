// Package shell turns a shell command string into every simple command it
// would run, so that a policy can decide on meaning rather than on spelling.
//
// Analyze parses the string as bash and walks it. Most agent commands (plain
// and quoted words, | && || ;, simple redirections) are parsed by a small
// fast parser that builds the same syntax tree as mvdan.cc/sh/v3/syntax;
// anything else goes to mvdan.cc/sh (FuzzFastParse checks that both give the
// same analysis). The walk covers lists, pipelines, subshells, groups,
// if/while/until/for/case/select bodies, function bodies, command and process
// substitutions (also inside here-docs, redirection targets and parameter
// defaults), arithmetic and [[ ]]. Words
// are expanded as the shell would: quotes and escapes removed, $'...'
// decoded, brace expansion performed (bounded), ~ and $HOME rendered "~",
// variables assigned earlier in the script substituted (simple constant
// propagation), unquoted expansions split on IFS. What is not statically
// known is marked Dynamic and rendered "*".
//
// Strings that a command runs as shell code are analysed recursively, up to
// Limits.MaxDepth: sh/bash/zsh/... -c, eval, su -c, sudo -s/-i, alias
// values, trap actions, watch, ssh's remote command and -o ProxyCommand,
// flock -c, script -c, env -S, parallel, xargs and find -exec commands,
// static here-documents fed to a shell, git -c core.sshCommand and git
// config alias.x '!cmd' and similar, tar --to-command, rsync -e, ncat -c,
// nc -e, socat EXEC:/SYSTEM:, tmux new/run-shell/if-shell, screen, and
// variables such as GIT_SSH_COMMAND. Wrappers (sudo, doas, env, command, builtin, exec, nohup, timeout, nice, ionice,
// time, stdbuf, setsid, unbuffer, chroot, flock, xargs, find, busybox,
// numactl, prlimit, tini, npx, poetry/uv/pipenv run, bundle/npm exec,
// direnv/aws-vault exec, docker/podman exec, kubectl exec -- ...) are
// reported as commands and so are the commands they run, with Wrappers and
// Parent linking them (Via "docker exec" or "kubectl exec" when the command
// runs elsewhere). find -delete is reported as a synthesized
// "rm -rf" of the starting points with Via "find -delete".
//
// Variables: an assignment with a static value makes the variable known for
// the statements that follow. Code that may or may not run (&&, ||, if and
// case branches, pipeline stages) makes the variables it assigns unknown
// afterwards; loops make the variables they assign unknown before and after;
// a for loop over at most 32 static words is analysed once per word (at most
// 64 iterations for nested loops), otherwise once with the variable unknown.
// Function bodies are analysed where they are defined with every variable
// unknown, and a call of a script function forgets every known value.
// source, a dynamic eval, and namerefs (declare -n) make every variable
// unknown for the rest of the script; attributes that transform values
// (declare -i/-l/-u) make the variable unknown. Variables from the
// environment are unknown, except HOME ("~") and IFS (space, tab, newline);
// a new shell (bash -c, ssh, su) starts with every variable unknown except
// HOME and its positional parameters.
//
// Flags: "-rf", "-r -f", "-fr" and "'-rf'" give Flags [f r]; "--force" gives
// "force"; "--x=v" gives "x"; "-20" gives "20"; words after "--" are
// positionals. Per program, aliases map long and variant spellings:
//
//	rm      --recursive, -R → r; --force → f; --interactive → i; --dir → d
//	cp      --recursive, -R → r; --force → f; --archive → a (a implies r)
//	mv      --force → f; --interactive → i; --no-clobber → n
//	chmod, chown, chgrp  --recursive → R; dash words that are not option
//	        letters (chmod -w, -rwx) are modes, i.e. positionals
//	git     --force → f; push +refspec adds f
//	docker, podman  --force → f
//	ln      --force → f; --symbolic → s
//	find    single-dash words are whole flags: -delete → "delete"
//	kubectl --force → "force" (-f is --filename and stays "f")
//
// Code: Command.Code reports code the analysis cannot see into: inline
// programs (python -c, node -e, perl -e, ruby -e, php -r, lua -e,
// pwsh -Command, osascript -e, Rscript -e, deno eval, bun -e, awk programs
// calling system() or piping to or from commands, sed's e command and s///e
// flag, vim -c, gdb -ex, make --eval), programs read from stdin or a
// process substitution (curl x | sh, python -, bash -s, sh < file,
// sh <(curl x)), and dynamic strings (bash -c "$x", eval "$(...)").
//
// What the analysis cannot see: the contents of script files (bash x.sh,
// python x.py, source x, make), what a binary does with its arguments,
// values only known at run time (the environment, command output, read
// input), aliases and functions defined by earlier commands in a persistent
// shell, and the current directory (cd changes what a relative path means).
// Such things are reported as they are (a command, a Dynamic word) for the
// policy to decide; Script.Assignments reports variables that change what
// programs do (LD_PRELOAD, BASH_ENV, PATH) and Script.Redirects every file
// a redirection opens. The top level is parsed as bash; zsh glob qualifiers
// that run code (*(e:...:)) are reported as CodeInline, and fish/csh -c
// strings are parsed as bash (a string that does not parse is an error).
//
// Order and links: Commands are in the order the shell would start them (a
// substitution's commands come before the command whose word holds it).
// Parent links a command to the one that ran it (sudo → rm, bash -c → its
// commands); Wrappers lists that chain by name; Via says how a string was
// reached. Name folds ASCII to lower case (macOS runs /BIN/RM) and drops
// ".exe"; it is "" for a Dynamic program and for a program word ending in
// "/". A redirection to /dev/tcp/... or /dev/udp/... is reported like any
// other (a network connection for the policy to judge).
//
// Patterns (CompilePattern, Match): a pattern is analysed like a command, so
// its flags are normalized the same way; it matches a command with the same
// Name (case folded), all of its flags, its positional words as a
// subsequence of the command's static Positionals, and its wrappers ("sudo
// rm -rf" needs rm run through sudo). Dynamic words never match a pattern
// word, and a Dynamic argument is not taken to be a flag: "xargs rm" is not
// matched by "rm -rf" (the policy sees the Dynamic argument and decides).
// In a pipeline pattern, a shell on the right matches any shell and python,
// perl, ruby, node, php, lua match their versioned names.
//
// Bounds: the source length (MaxBytes), the nesting of analysed strings
// (MaxDepth), the commands reported (MaxCommands), the expanded words
// (MaxWords, brace expansion included), the length of any expanded word
// (MaxBytes), the total bytes of expanded words (16×MaxBytes) and of nested
// strings (8×MaxBytes), the statements visited (64×MaxCommands), and, for
// the parser, bracket nesting (MaxNesting) and opening brackets
// (MaxOpeners), since mvdan.cc/sh's cost grows faster than linearly with
// nesting. An exceeded bound is an error wrapping ErrLimit; a parse error is
// an error with the parser's position; Analyze never panics (it also
// recovers, as a last resort, and returns an error).
package shell
