package hosts

import "strings"

// LooksLikeURL reports whether a shell word looks like a fetch target, for the shell analysis to
// check it as one: "scheme://...", "http:host" (special schemes need no slashes), "//host/..." with
// a dotted or IP host, "host:port" optionally followed by "/...", an IP literal followed by "/" or
// written in full ("169.254.169.254", "0xA9FEA9FE", "[::1]"), and the well-known internal names
// ("localhost", "metadata.google.internal", ...) alone or followed by "/" or ":port".
//
// It is a heuristic: "example.com/x" and "docs/x.md" are alike, so bare "name/path" words are not
// URLs to it, and neither are numbers such as "1.5". Words a command is known to fetch (curl's and
// wget's arguments) should be parsed with ParseURL whatever this says.
func LooksLikeURL(word string) bool {
	if word == "" || len(word) > MaxURLLen {
		return false
	}
	if scheme, rest, ok := cutScheme(word); ok {
		if strings.HasPrefix(rest, "//") || (special[scheme] && rest != "") {
			return true
		}
	}
	w := word
	slashSlash := strings.HasPrefix(w, "//")
	if slashSlash {
		w = w[2:]
	}
	end := strings.IndexAny(w, "/?#")
	tail := end >= 0
	if !tail {
		end = len(w)
	}
	hostport := w[:end]
	if at := strings.LastIndexByte(hostport, '@'); at >= 0 {
		hostport = hostport[at+1:]
	}
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		if i := strings.IndexByte(hostport, ']'); i >= 0 {
			host = hostport[:i+1]
			port = strings.TrimPrefix(hostport[i+1:], ":")
		}
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
	}
	name, ip, err := canonicalHost(host)
	if err != nil {
		return false
	}
	hasPort := port != "" && len(port) <= 5 && isDigits(port)
	switch {
	case hasPort:
		return true
	case ip.IsValid():
		return tail || slashSlash || host[0] == '[' || strings.Count(host, ".") == 3 ||
			strings.HasPrefix(strings.ToLower(host), "0x")
	case slashSlash:
		return strings.Contains(name, ".")
	}
	r := NameReason(name)
	return r == ReasonLoopback || r == ReasonCloudMetadata || r == ReasonClusterInternal
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
