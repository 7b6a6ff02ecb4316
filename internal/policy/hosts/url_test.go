package hosts

import (
	"errors"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		in                         string
		scheme, host, port, reason string
		userinfo                   bool
	}{
		// IPv4 in every inet_aton spelling
		{"http://169.254.169.254/latest/meta-data/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://2852039166/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://0xA9FEA9FE/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://0XA9FEA9FE/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://0xa9.0xfe.0xa9.0xfe/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://0251.0376.0251.0376/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://0251.254.0xa9.254/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://169.254.43518/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://169.16689662/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://00000000000251.0x00000000fe.169.254/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://127.1:10250/", "http", "127.0.0.1", "10250", ReasonLoopback, false},
		{"http://0x7f.1/", "http", "127.0.0.1", "", ReasonLoopback, false},
		{"http://017700000001/", "http", "127.0.0.1", "", ReasonLoopback, false},
		{"http://0/", "http", "0.0.0.0", "", ReasonUnspecified, false},
		{"http://0x/", "http", "0.0.0.0", "", ReasonUnspecified, false},
		{"http://0.0.0.0:8080/", "http", "0.0.0.0", "8080", ReasonUnspecified, false},
		{"http://1.2.3.4./", "http", "1.2.3.4", "", "", false},
		// IPv6, embedded IPv4, zones
		{"http://[::ffff:a9fe:a9fe]/", "http", "::ffff:169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://[::ffff:169.254.169.254]/", "http", "::ffff:169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://[0:0:0:0:0:ffff:a9fe:a9fe]/", "http", "::ffff:169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://[::169.254.169.254]/", "http", "::a9fe:a9fe", "", ReasonCloudMetadata, false},
		{"http://[::ffff:0:a9fe:a9fe]/", "http", "::ffff:0:a9fe:a9fe", "", ReasonCloudMetadata, false},
		{"http://[64:ff9b::169.254.169.254]/", "http", "64:ff9b::a9fe:a9fe", "", ReasonCloudMetadata, false},
		{"http://[64:ff9b:1::a9fe:a9fe]/", "http", "64:ff9b:1::a9fe:a9fe", "", ReasonCloudMetadata, false},
		{"http://[2002:a9fe:a9fe::1]/", "http", "2002:a9fe:a9fe::1", "", ReasonCloudMetadata, false},
		{"http://[::ffff:127.0.0.1]:80/", "http", "::ffff:127.0.0.1", "80", ReasonLoopback, false},
		{"http://[::ffff:8.8.8.8]/", "http", "::ffff:8.8.8.8", "", "", false},
		{"http://[fd00:ec2::254]/latest", "http", "fd00:ec2::254", "", ReasonCloudMetadata, false},
		{"http://[FD20:CE::254]/", "http", "fd20:ce::254", "", ReasonCloudMetadata, false},
		{"http://[fe80::1%25eth0]/", "http", "fe80::1%eth0", "", ReasonLinkLocal, false},
		{"http://[fe80::1%eth0]:8080/", "http", "fe80::1%eth0", "8080", ReasonLinkLocal, false},
		{"http://[::]/", "http", "::", "", ReasonUnspecified, false},
		{"http://[::1]/", "http", "::1", "", ReasonLoopback, false},
		{"http://[fc00::1]/", "http", "fc00::1", "", ReasonPrivate, false},
		{"http://[ff02::1]/", "http", "ff02::1", "", ReasonMulticast, false},
		{"http://[2001:db8::1]/", "http", "2001:db8::1", "", ReasonReserved, false},
		{"http://[2001::1]/", "http", "2001::1", "", ReasonReserved, false},
		{"http://[4000::1]/", "http", "4000::1", "", ReasonReserved, false},
		{"http://[2606:4700:4700::1111]/", "http", "2606:4700:4700::1111", "", "", false},
		// names
		{"http://METADATA.GOOGLE.INTERNAL./", "http", "metadata.google.internal", "", ReasonCloudMetadata, false},
		{"http://metadata.google.internal../x", "http", "metadata.google.internal", "", ReasonCloudMetadata, false},
		{"http://metadata/computeMetadata/v1/", "http", "metadata", "", ReasonCloudMetadata, false},
		{"http://instance-data.ec2.internal/", "http", "instance-data.ec2.internal", "", ReasonCloudMetadata, false},
		{"http://metadata.goog/", "http", "metadata.goog", "", ReasonCloudMetadata, false},
		{"http://localhost/", "http", "localhost", "", ReasonLoopback, false},
		{"http://LOCALHOST:80", "http", "localhost", "80", ReasonLoopback, false},
		{"http://app.localhost/", "http", "app.localhost", "", ReasonLoopback, false},
		{"http://kubernetes.default.svc/api", "http", "kubernetes.default.svc", "", ReasonClusterInternal, false},
		{"https://kubernetes.default.svc.cluster.local/", "https", "kubernetes.default.svc.cluster.local", "", ReasonClusterInternal, false},
		{"http://kubernetes.default/", "http", "kubernetes.default", "", ReasonClusterInternal, false},
		{"http://kubernetes/", "http", "kubernetes", "", ReasonClusterInternal, false},
		{"http://redis.prod.svc.cluster.local:6379/", "http", "redis.prod.svc.cluster.local", "6379", ReasonClusterInternal, false},
		{"http://169.254.169.254.nip.io/", "http", "169.254.169.254.nip.io", "", ReasonWildcardDNS, false},
		{"http://a9fea9fe.nip.io/", "http", "a9fea9fe.nip.io", "", ReasonWildcardDNS, false},
		{"http://169-254-169-254.sslip.io/", "http", "169-254-169-254.sslip.io", "", ReasonWildcardDNS, false},
		{"http://intranet/", "http", "intranet", "", ReasonInternalName, false},
		{"http://jenkins.corp/", "http", "jenkins.corp", "", ReasonInternalName, false},
		{"http://db.internal/", "http", "db.internal", "", ReasonInternalName, false},
		{"http://printer.local/", "http", "printer.local", "", ReasonInternalName, false},
		{"http://example.test/", "http", "example.test", "", ReasonReserved, false},
		{"https://example.com/", "https", "example.com", "", "", false},
		{"HTTPS://API.GitHub.com/repos", "https", "api.github.com", "", "", false},
		{"http://xn--bcher-kva.de/", "http", "xn--bcher-kva.de", "", "", false},
		// IPv4 ranges
		{"http://100.100.100.200/", "http", "100.100.100.200", "", ReasonCloudMetadata, false},
		{"http://100.64.0.1/", "http", "100.64.0.1", "", ReasonShared, false},
		{"http://192.0.0.192/", "http", "192.0.0.192", "", ReasonCloudMetadata, false},
		{"http://192.0.0.8/", "http", "192.0.0.8", "", ReasonReserved, false},
		{"http://169.254.170.2/v2/credentials", "http", "169.254.170.2", "", ReasonCloudMetadata, false},
		{"http://168.63.129.16/", "http", "168.63.129.16", "", ReasonCloudMetadata, false},
		{"http://169.254.1.1/", "http", "169.254.1.1", "", ReasonLinkLocal, false},
		{"http://10.0.0.1/", "http", "10.0.0.1", "", ReasonPrivate, false},
		{"http://172.16.0.1/", "http", "172.16.0.1", "", ReasonPrivate, false},
		{"http://172.32.0.1/", "http", "172.32.0.1", "", "", false},
		{"http://192.168.1.1/", "http", "192.168.1.1", "", ReasonPrivate, false},
		{"http://224.0.0.1/", "http", "224.0.0.1", "", ReasonMulticast, false},
		{"http://255.255.255.255/", "http", "255.255.255.255", "", ReasonBroadcast, false},
		{"http://240.0.0.1/", "http", "240.0.0.1", "", ReasonReserved, false},
		{"http://198.18.0.1/", "http", "198.18.0.1", "", ReasonReserved, false},
		{"http://8.8.8.8/", "http", "8.8.8.8", "", "", false},
		// authority tricks
		{"http://good@169.254.169.254/", "http", "169.254.169.254", "", ReasonCloudMetadata, true},
		{"http://user:pass@example.com:8080/x", "http", "example.com", "8080", "", true},
		{"http://example.com#@169.254.169.254/", "http", "example.com", "", "", false},
		{"http://example.com?@169.254.169.254/", "http", "example.com", "", "", false},
		{"http://example.com/@169.254.169.254/", "http", "example.com", "", "", false},
		{"http://%31%36%39.254.169.254/", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http://169.254.169.254:0080/", "http", "169.254.169.254", "80", ReasonCloudMetadata, false},
		{"http://example.com:/", "http", "example.com", "", "", false},
		{"  http://169.254.169.254/  ", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		// no scheme, few slashes
		{"169.254.169.254/latest", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"169.254.169.254", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"//169.254.169.254/x", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"localhost:8080/x", "http", "localhost", "8080", ReasonLoopback, false},
		{"user@169.254.169.254", "http", "169.254.169.254", "", ReasonCloudMetadata, true},
		{"http:169.254.169.254", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http:/169.254.169.254", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"http:///169.254.169.254", "http", "169.254.169.254", "", ReasonCloudMetadata, false},
		{"HTTP://x.example.com", "http", "x.example.com", "", "", false},
		// other schemes
		{"file:///etc/passwd", "file", "", "", ReasonScheme, false},
		{"file://localhost/etc/passwd", "file", "localhost", "", ReasonScheme, false},
		{"file:/etc/passwd", "file", "", "", ReasonScheme, false},
		{"gopher://127.0.0.1:6379/_INFO", "gopher", "127.0.0.1", "6379", ReasonScheme, false},
		{"dict://127.0.0.1:11211/stats", "dict", "127.0.0.1", "11211", ReasonScheme, false},
		{"ftp://example.com/x", "ftp", "example.com", "", ReasonScheme, false},
		{"ldap://example.com/", "ldap", "example.com", "", ReasonScheme, false},
		{"jar:http://example.com/x.jar!/", "jar", "", "", ReasonScheme, false},
		{"data:text/plain,hello", "data", "", "", ReasonScheme, false},
		{"javascript:alert(1)", "javascript", "", "", ReasonScheme, false},
		{"ws://127.0.0.1/", "ws", "127.0.0.1", "", ReasonScheme, false},
		{"evil+x://example.com/", "evil+x", "example.com", "", ReasonScheme, false},
	}
	for _, tc := range cases {
		u, err := ParseURL(tc.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.in, err)
			continue
		}
		if u.Scheme != tc.scheme || u.Host != tc.host || u.Port != tc.port || u.Userinfo != tc.userinfo {
			t.Errorf("ParseURL(%q) = %+v, want scheme %q host %q port %q userinfo %v", tc.in, u, tc.scheme, tc.host, tc.port, tc.userinfo)
		}
		if u.IP.IsValid() && u.Host != u.IP.String() {
			t.Errorf("ParseURL(%q): Host %q, IP %v", tc.in, u.Host, u.IP)
		}
		if r := BlockedReason(u); r != tc.reason {
			t.Errorf("BlockedReason(ParseURL(%q)) = %q, want %q", tc.in, r, tc.reason)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrEmptyHost},
		{"http://", ErrEmptyHost},
		{"http:///", ErrEmptyHost},
		{"https:", ErrEmptyHost},
		{"http://:80/", ErrEmptyHost},
		{"http://a@b@169.254.169.254/", ErrAmbiguous},
		{"http://169.254.169.254%2f@example.com/", ErrAmbiguous},
		{"http://169.254.169.254%2F@example.com/", ErrAmbiguous},
		{"http://example.com%40169.254.169.254/", ErrAmbiguous},
		{"http://evil.com\\@169.254.169.254/", ErrAmbiguous},
		{"http:\\\\169.254.169.254\\", ErrAmbiguous},
		{"http://169.254.169.254\n/", ErrControl},
		{"http://169.254.\t169.254/", ErrControl},
		{"http://exa mple.com/", ErrControl},
		{"http://x\x00y/", ErrControl},
		{"http://%00x/", ErrControl},
		{"http://1.2.3.256/", ErrBadIPv4},
		{"http://foo.123/", ErrBadIPv4},
		{"http://08.1.1.1/", ErrBadIPv4},
		{"http://1.2.3.4.5/", ErrBadIPv4},
		{"http://4294967296/", ErrBadIPv4},
		{"http://0x100000000/", ErrBadIPv4},
		{"http://1.2.65536/", ErrBadIPv4},
		{"http://256.1/", ErrBadIPv4},
		{"http://1..1/", ErrBadIPv4},
		{"http://a..b/", ErrBadHost},
		{"http://０x７f.1/", ErrNonASCII},
		{"http://bücher.de/", ErrNonASCII},
		{"http://%c3%bc.de/", ErrNonASCII},
		{"http://[::1/", ErrBadIPv6},
		{"http://[1.2.3.4]/", ErrBadIPv6},
		{"http://[v1.x]/", ErrBadIPv6},
		{"http://[fe80::1%]/", ErrBadIPv6},
		{"http://[::1]x/", ErrBadHost},
		{"http://x:99999/", ErrBadPort},
		{"http://x:8o/", ErrBadPort},
		{"http://x:+80/", ErrBadPort},
		{"http://a:b:c/", ErrBadHost},
		{"http://*.example.com/", ErrBadHost},
		{"http://exa_mple!.com/", ErrBadHost},
		{"http://" + strings.Repeat("a", 64) + ".com/", ErrBadHost},
		{"http://" + strings.Repeat("a.", 127) + "com/", ErrTooLong},
		{"http://x/" + strings.Repeat("a", MaxURLLen), ErrTooLong},
		{"foo:bar", ErrBadPort},
		{"http://%zz/", ErrBadHost},
	}
	for _, tc := range cases {
		u, err := ParseURL(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("ParseURL(%.40q) = %+v, %v; want error %v", tc.in, u, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "169") || strings.Contains(err.Error(), "example")) {
			t.Errorf("error %q echoes the input", err)
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	cases := []struct{ in, host string }{
		{"Example.COM.", "example.com"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"[::FFFF:A9FE:A9FE]", "::ffff:169.254.169.254"},
		{"2852039166", "169.254.169.254"},
		{"0x", "0.0.0.0"},
		{"0x.0x.0x.0x", "0.0.0.0"},
		{"0X7F.1", "127.0.0.1"},
		{"1", "0.0.0.1"},
		{"1.2", "1.0.0.2"},
		{"1.2.3", "1.2.0.3"},
		{"1.0x10000", "1.1.0.0"},
		{"0377.0377.0377.0377", "255.255.255.255"},
		{"00000000000000000000001", "0.0.0.1"},
		{"0x00000000000000001", "0.0.0.1"},
		{"4294967295", "255.255.255.255"},
		{"under_score.example.com", "under_score.example.com"},
		{"0x1g", "0x1g"}, // not a number: a name
		{"1e3", "1e3"},
	}
	for _, tc := range cases {
		h, ip, err := CanonicalHost(tc.in)
		if err != nil || h != tc.host {
			t.Errorf("CanonicalHost(%q) = %q, %v, %v; want %q", tc.in, h, ip, err, tc.host)
		}
		if ip.IsValid() != (strings.ContainsAny(h, ":") || endsInNumber(h)) {
			t.Errorf("CanonicalHost(%q): ip %v for %q", tc.in, ip, h)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "09", "0x1.09", "1.2.3.4.5", "a b", "[::1", "[]",
		strings.Repeat("a", 64), strings.Repeat("a.", 127) + "aa"} {
		if h, _, err := CanonicalHost(bad); err == nil {
			t.Errorf("CanonicalHost(%q) = %q, want an error", bad, h)
		}
	}
}

func TestEmbeddedIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:1.2.3.4": "1.2.3.4", "::1.2.3.4": "1.2.3.4", "::ffff:0:1.2.3.4": "1.2.3.4",
		"64:ff9b::1.2.3.4": "1.2.3.4", "64:ff9b:1::1.2.3.4": "1.2.3.4", "2002:102:304::": "1.2.3.4",
		"1.2.3.4": "1.2.3.4", "::1": "", "::": "", "2606:4700::1": "", "fe80::1.2.3.4%eth0": "",
	} {
		h, ip, err := CanonicalHost(in)
		if err != nil {
			t.Fatalf("CanonicalHost(%q): %v", in, err)
		}
		got, ok := EmbeddedIPv4(ip)
		if (want == "") == ok || (ok && got.String() != want) {
			t.Errorf("EmbeddedIPv4(%s) = %v, %v; want %q", h, got, ok, want)
		}
	}
}
