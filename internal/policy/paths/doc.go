// Package paths canonicalizes file paths as an agent's tools and shell pass them, and matches them
// against path patterns (allowed_paths, blocked_paths and the built-in sensitive baselines).
//
// The package is pure Go (standard library only) and reasons lexically: it never touches the file
// system. Tollgate assumes a prompt-injected caller that tries every spelling of a path, so:
//
//   - Canonical resolves "//", "." and ".." (path.Clean semantics), folds "~", "$HOME" and "${HOME}"
//     to "~" (the agent's home, unknown statically), and undoes the few symbolic links whose ".." would
//     otherwise be resolved wrongly: /proc/<pid>/root is "/", /proc/<pid>/cwd is the working directory
//     (or an unknown directory for another process), /proc/thread-self/.. and /var/run/.. climb as the
//     kernel climbs. A path whose directory is unknown is written in the climbing form "../rest".
//   - Match (and MatchGlob for shell globs) answers "could this be a path the pattern names?": when the
//     agent's home or working directory makes the answer uncertain it says yes (fail closed), and it
//     compares names case-insensitively (macOS, and case-folding directories on Linux, open
//     "~/.SSH/ID_RSA" as "~/.ssh/id_rsa"). Use it for block lists.
//   - Covers (and CoversGlob) answers "is this certainly a path the pattern names?": uncertainty says
//     no, and names compare exactly. Use it for allow lists; Match on an allow list would let
//     "../../etc/x" or "~/x" through.
//
// # Pattern syntax
//
// A pattern is an absolute path ("/etc/shadow"), a home path ("~/.ssh/**", "$HOME/.aws"), a relative
// path ("secrets/**", relative to the agent's working directory) or an anywhere pattern ("**/.env").
// "*" matches within one component, "**" (a whole component) matches any number of components
// including none, "?" one character, "[...]" a character class ("[^...]" or "[!...]" negates), and
// "\" escapes the next character. A pattern whose last component has no glob character also matches
// everything below it ("~/.ssh" matches "~/.ssh/id_rsa"); "x/**" matches x itself too.
//
// # Homes
//
// The agent's home is unknown: for Match, a "~/..." pattern also matches "/root/...",
// "/home/<anyone>/..." and "/Users/<anyone>/..." (macOS), and a "~/..." or "~user/..." path is also
// matched by such patterns. Homes elsewhere (/var/lib/jenkins, /github/home) are not guessed: a caller
// that knows the home substitutes it for "~" before matching.
//
// # Limits
//
// Reasoning is lexical: a symbolic link the agent created (ln -s /etc /tmp/e; cat /tmp/e/shadow), a
// hard link, a bind mount or a file descriptor inherited from elsewhere is invisible here; the shell
// analysis must treat creating links as writing their target. Paths and patterns are capped at
// MaxPathLen bytes, patterns at MaxPatternComponents components, and glob matching at a fixed work
// budget (past it MatchGlob says "could match" and CoversGlob says "not covered").
package paths
