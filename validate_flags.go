package main

import (
	"strings"
	"unicode/utf8"
)

// Flags, as validators receive them. The rule: --name=value and, for an
// option listed below as taking a value, --name value, -X value and -Xvalue
// give the value; any other option is a switch with the value "". -abc is
// the switches a, b and c, unless one of them takes a value, which is then
// the rest of the word or the next word. An option listed with a trailing
// ? takes a value only when attached (sed -i.bak, mysql -psecret). For
// commands whose options are whole words (find -name, go test -run), -name
// is one option. After --, and for commands marked stopAtArg after their
// first operand (ssh host ls -l), every word is an argument. A rule named
// "docker run" replaces the rule of "docker" once the first operand is run.

// cmdFlagRule is how one command's options look.
type cmdFlagRule struct {
	values     string // options that take a value
	bools      string // with longValues: long options that take none
	wholeWords bool   // -name is one option, not -n -a -m -e
	longValues bool   // every --option takes a value unless listed in bools
	stopAtArg  bool   // options end at the first operand
}

var cmdFlagRules = map[string]cmdFlagRule{
	"curl": {values: "-X -H -d -o -u -A -e -b -c -F -T -x -U -m -w -K -E -r -C -y -Y -z -Q --request --header --data --data-raw --data-binary --data-urlencode --data-ascii --json --output --output-dir --user --user-agent --referer --cookie --cookie-jar --form --form-string --upload-file --proxy --proxy-user --max-time --connect-timeout --write-out --config --cert --key --cacert --capath --resolve --connect-to --retry --retry-delay --retry-max-time --range --url --limit-rate --max-filesize --interface --dns-servers --oauth2-bearer --unix-socket --netrc-file --variable"},
	"wget": {values: "-O -o -a -P -U -t -T -e -i -B -Q -w -l -A -R -D -I -X --output-document --output-file --append-output --directory-prefix --user-agent --header --post-data --post-file --method --body-data --body-file --user --password --http-user --http-password --tries --timeout --wait --level --accept --reject --domains --include-directories --exclude-directories --input-file --base --quota --load-cookies --save-cookies --referer"},

	"git":          {values: "-C -c --git-dir --work-tree --namespace --exec-path --config-env --super-prefix"},
	"git commit":   {values: "-m -F -C -c -t --message --file --author --date --reuse-message --reedit-message --fixup --squash --cleanup --template --trailer"},
	"git push":     {values: "-o --push-option --repo --receive-pack --exec --force-with-lease?"},
	"git clone":    {values: "-b -o -c -u -j --branch --origin --depth --reference --template --upload-pack --config --separate-git-dir --shallow-since --shallow-exclude --filter --jobs"},
	"git checkout": {values: "-b -B --orphan"},
	"git switch":   {values: "-c -C --orphan --create --force-create"},
	"git merge":    {values: "-m -s -X -F --message --strategy --strategy-option --file"},
	"git pull":     {values: "-s -X -j --strategy --strategy-option --depth --jobs"},
	"git fetch":    {values: "-j -o --depth --deepen --shallow-since --shallow-exclude --jobs --server-option --upload-pack"},
	"git rebase":   {values: "-s -X -x --onto --exec --strategy --strategy-option"},
	"git tag":      {values: "-m -F -u --message --file --local-user"},
	"git log":      {values: "-n --max-count --author --committer --since --until --after --before --grep --format --pretty --date --skip"},
	"git config":   {values: "-f --file --blob --type --default"},
	"git branch":   {values: "-u --set-upstream-to"},
	"git remote":   {values: "-t -m"},
	"git grep":     {values: "-e -f -A -B -C -m --max-count --context --after-context --before-context"},

	"ssh":   {values: "-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B", stopAtArg: true},
	"scp":   {values: "-c -D -F -i -J -l -o -P -S -X"},
	"sftp":  {values: "-B -b -c -D -F -i -J -l -o -P -R -S -s -X"},
	"rsync": {values: "-e -f -T -B --rsh --exclude --include --filter --exclude-from --include-from --files-from --chmod --chown --usermap --groupmap --rsync-path --bwlimit --timeout --contimeout --port --log-file --log-file-format --temp-dir --partial-dir --backup-dir --suffix --compare-dest --copy-dest --link-dest --max-size --min-size --max-delete --block-size --password-file --out-format"},

	"kubectl": {values: "-n -l -o -f -c -s -k -L --namespace --context --cluster --user --kubeconfig --selector --output --filename --container --server --token --as --as-group --field-selector --timeout --grace-period --type --replicas --image --patch --kustomize --label-columns --sort-by --template --since --since-time --tail --port --address --from-literal --from-file --from-env-file --overrides --cascade --request-timeout --certificate-authority --client-certificate --client-key"},
	"helm":    {values: "-n -f -o --namespace --values --set --set-string --set-file --set-json --version --kube-context --kubeconfig --repo --output --timeout --post-renderer --description --name-template"},

	"docker":         {values: "-H -c -l --host --context --config --log-level --tlscacert --tlscert --tlskey"},
	"docker run":     {values: "-a -c -e -h -l -m -p -u -v -w --attach --cpu-shares --env --env-file --hostname --label --label-file --memory --publish --user --volume --workdir --name --network --net --entrypoint --mount --cpus --restart --add-host --device --cap-add --cap-drop --security-opt --ulimit --gpus --platform --pull --tmpfs --link --log-driver --log-opt --dns --expose --cidfile --ipc --pid --shm-size --stop-signal --stop-timeout --runtime --userns --uts --volumes-from --health-cmd --ip --mac-address --memory-swap --cgroup-parent --group-add --isolation --sysctl --storage-opt", stopAtArg: true},
	"docker create":  {values: "-a -c -e -h -l -m -p -u -v -w --attach --cpu-shares --env --env-file --hostname --label --label-file --memory --publish --user --volume --workdir --name --network --net --entrypoint --mount --cpus --restart --add-host --device --cap-add --cap-drop --security-opt --ulimit --gpus --platform --pull --tmpfs --link --log-driver --log-opt --dns --expose --cidfile --ipc --pid --shm-size --stop-signal --stop-timeout --runtime --userns --uts --volumes-from", stopAtArg: true},
	"docker exec":    {values: "-e -u -w --env --env-file --user --workdir --detach-keys", stopAtArg: true},
	"docker build":   {values: "-t -f -o --tag --file --build-arg --target --platform --label --network --progress --secret --ssh --cache-from --cache-to --output --iidfile --add-host --shm-size --ulimit --build-context --cgroup-parent --isolation --memory --metadata-file"},
	"docker pull":    {values: "--platform"},
	"docker push":    {values: "--platform"},
	"docker compose": {values: "-f -p --file --project-name --profile --env-file --project-directory"},

	"aws":    {longValues: true, bools: "--debug --no-verify-ssl --no-paginate --no-sign-request --recursive --dryrun --dry-run --no-dry-run --force --quiet --only-show-errors --no-progress --delete --exact-timestamps --follow-symlinks --no-follow-symlinks --human-readable --summarize --no-cli-pager --cli-auto-prompt --no-cli-auto-prompt --version --help"},
	"gcloud": {longValues: true, bools: "--quiet --async --no-user-output-enabled --log-http --help --version --dry-run --all --recursive --preemptible --no-address --enable-ip-alias --force"},
	"az":     {longValues: true, bools: "--yes --debug --verbose --only-show-errors --no-wait --help --all --force"},

	"terraform": {wholeWords: true, values: "-var -var-file -target -state -state-out -out -backend-config -lock-timeout -parallelism -replace -chdir -from-module -generate-config-out"},
	"go":        {wholeWords: true, values: "-o -C -run -bench -count -timeout -tags -ldflags -gcflags -asmflags -p -coverprofile -covermode -coverpkg -cpuprofile -memprofile -blockprofile -mutexprofile -trace -exec -mod -modfile -pkgdir -toolexec -fuzz -fuzztime -fuzzminimizetime -parallel -benchtime -skip -outputdir -vet -shuffle -overlay -pgo -compiler -buildmode -installsuffix -cpu -list"},
	"find":      {wholeWords: true, values: "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype -maxdepth -mindepth -newer -anewer -cnewer -perm -size -user -group -uid -gid -mtime -atime -ctime -mmin -amin -cmin -used -inum -links -samefile -fstype -fprint -fprint0 -fprintf -fls -printf -regextype -context -exec -execdir -ok -okdir"},

	"psql":  {values: "-c -d -f -h -p -U -o -L -v -P -F -R -T --command --dbname --file --host --port --username --output --set --variable --pset --log-file"},
	"mysql": {values: "-e -h -u -P -D -S -p? --execute --host --user --port --database --socket"},

	"grep":       {values: "-e -f -m -A -B -C -d -D --regexp --file --max-count --after-context --before-context --context --include --exclude --exclude-dir --exclude-from --label --devices --directories --binary-files"},
	"rg":         {values: "-e -f -g -t -T -m -A -B -C -r -j -M --regexp --file --glob --iglob --type --type-not --max-count --after-context --before-context --context --replace --threads --max-columns --max-depth --max-filesize --type-add --sort --sortr --pre --pre-glob --encoding --engine"},
	"sed":        {values: "-e -f -l -i? --expression --file --line-length"},
	"awk":        {values: "-F -v -f --field-separator --assign --file"},
	"tar":        {values: "-f -C -T -X -b -g -H -I -K -N -V --file --directory --files-from --exclude-from --exclude --use-compress-program --transform --owner --group --mode --mtime --newer --format --label --to-command --checkpoint-action --info-script --new-volume-script --rsh-command"},
	"head":       {values: "-n -c --lines --bytes"},
	"tail":       {values: "-n -c -s --lines --bytes --sleep-interval --pid"},
	"sort":       {values: "-k -t -o -S -T --key --field-separator --output --buffer-size --temporary-directory --parallel"},
	"cut":        {values: "-d -f -c -b --delimiter --fields --characters --bytes --output-delimiter"},
	"cp":         {values: "-t -S --target-directory --suffix"},
	"mv":         {values: "-t -S --target-directory --suffix"},
	"ln":         {values: "-t -S --target-directory --suffix"},
	"install":    {values: "-t -S -m -o -g --target-directory --suffix --mode --owner --group"},
	"ps":         {values: "-o -p -u -U -C -G -g -t -q --format --pid --user --sort --ppid"},
	"kill":       {values: "-s -n"},
	"date":       {values: "-d -f -r --date --file --reference"},
	"make":       {values: "-C -f -j -I -o -W -l --directory --file --jobs --include-dir --old-file --what-if --load-average"},
	"nc":         {values: "-e -c -p -s -w -x -X -i -q -W -I -O -P -T"},
	"systemctl":  {values: "-H -M -p -t -n -o -s --host --machine --property --type --state --lines --output --signal --kill-whom --root --job-mode"},
	"journalctl": {values: "-u -n -p -o -S -U -t -D -M -g --unit --lines --priority --output --since --until --identifier --directory --user-unit --grep --file"},

	"gh":  {values: "-R -b -t -F -f -X -H -q -B -a -l -m -L -s -r --repo --body --body-file --title --field --raw-field --method --header --jq --template --base --head --assignee --label --milestone --limit --state --reviewer"},
	"npm": {values: "-w --prefix --registry --workspace --cache --userconfig --tag --otp --access"},
	"npx": {values: "-p -c --package --call", stopAtArg: true},
	"pip": {values: "-r -c -i -e -t -f --requirement --constraint --index-url --extra-index-url --editable --target --find-links --prefix --root --src --trusted-host --proxy --cert --client-cert --timeout --retries --log --cache-dir --platform --python-version --implementation --abi --only-binary --no-binary --progress-bar --upgrade-strategy --report"},

	"python3": {values: "-c -m -W -X", stopAtArg: true},
	"node":    {values: "-e -p -r --eval --print --require --import --loader --input-type", stopAtArg: true},
	"perl":    {values: "-e -E -I -M -m", stopAtArg: true},
	"ruby":    {values: "-e -I -r -C", stopAtArg: true},
	"sh":      {values: "-c -o -O --rcfile --init-file", stopAtArg: true},
}

// cmdFlagAliases share a rule: podman reads docker's options.
var cmdFlagAliases = map[string]string{
	"podman": "docker", "python": "python3", "pip3": "pip", "gawk": "awk", "mawk": "awk", "ncat": "nc", "netcat": "nc",
	"bash": "sh", "dash": "sh", "zsh": "sh", "ksh": "sh", "mksh": "sh", "ash": "sh", "pnpm": "npm",
}

// flagRule finds the rule of a command ("docker") or of one of its
// subcommands ("docker run"); wrappers use their own option lists.
func flagRule(name string) (cmdFlagRule, bool) {
	first, sub, _ := strings.Cut(name, " ")
	if alias, ok := cmdFlagAliases[first]; ok {
		name = strings.TrimSpace(alias + " " + sub)
	}
	if r, ok := cmdFlagRules[name]; ok {
		return r, true
	}
	if t, ok := optTables()[name]; ok {
		return cmdFlagRule{values: t.valueOptions(), stopAtArg: true}, true
	}
	return cmdFlagRule{}, false
}

// takesValue says whether an option (with its dashes) takes a value, and
// whether only an attached one.
func (r cmdFlagRule) takesValue(opt string) (takes, attachedOnly bool) {
	if r.longValues && strings.HasPrefix(opt, "--") {
		return !hasWord(r.bools, opt), false
	}
	if hasWord(r.values, opt) {
		return true, false
	}
	if hasWord(r.values, opt+"?") {
		return true, true
	}
	return false, false
}

// commandFlags splits a command's arguments into flags (names without
// their dashes) and positional arguments, by the rule above.
func commandFlags(name string, args []string) (flags map[string]string, positional []string) {
	flags, positional = map[string]string{}, []string{}
	rule, _ := flagRule(name)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			if len(positional) == 0 {
				if sub, ok := flagRule(name + " " + a); ok {
					rule = sub
					positional = append(positional, a)
					continue
				}
			}
			if rule.stopAtArg {
				return flags, append(positional, args[i:]...)
			}
			positional = append(positional, a)
		case a[1] == '-' || rule.wholeWords:
			dashes := 1
			if a[1] == '-' {
				dashes = 2
			}
			k, v, eq := strings.Cut(a[dashes:], "=")
			if takes, attached := rule.takesValue(a[:dashes] + k); takes && !attached && !eq && i+1 < len(args) {
				i++
				v = args[i]
			}
			flags[k] = v
		default:
			for j := 1; j < len(a); {
				_, size := utf8.DecodeRuneInString(a[j:])
				opt := a[j : j+size]
				takes, attached := rule.takesValue("-" + opt)
				if !takes {
					flags[opt] = ""
					j += size
					continue
				}
				v := a[j+size:]
				if v == "" && !attached && i+1 < len(args) {
					i++
					v = args[i]
				}
				flags[opt] = v
				break
			}
		}
	}
	return flags, positional
}

// valueOptions lists a wrapper's options that take a value as a flag rule
// does: "-u --user -d? --differences?".
func (t optTable) valueOptions() string {
	var vals []string
	for name, d := range t {
		switch d.arg {
		case '=':
			vals = append(vals, name)
		case '?':
			vals = append(vals, name+"?")
		}
	}
	return strings.Join(vals, " ")
}
