package bashclass

// Option tables of the programs parsed with GNU getopt_long (see
// [gnuModel]). Each table lists the program's real options — every long
// name, so that abbreviations resolve as the program resolves them — with
// "!" marking the ones the policy refuses. An option that is not listed is
// unknown and refused. The lists follow the installed GNU coreutils 9.1,
// grep 3.8, diffutils 3.8, findutils 4.9, sed 4.9, file 5.44, util-linux
// 2.38 and binutils 2.40; TestOptionProbe checks every value-taking entry
// against the real program.

// help is shared by the GNU tools: --help and --version only print.
const help = `
- help .
- version .
`

// digitFlags are the option letters 0-9 of tools that read -NUM as a
// count (grep's context lines, fold's and fmt's width, uniq's fields).
const digitFlags = `
0 - .
1 - .
2 - .
3 - .
4 - .
5 - .
6 - .
7 - .
8 - .
9 - .
`

var gnuTools = map[string]*gnuModel{
	"cat": gnu("cat", help+`
A show-all .
b number-nonblank .
e - .
E show-ends .
n number .
s squeeze-blank .
t - .
T show-tabs .
u - .
v show-nonprinting .
`),
	"cut": gnu("cut", help+`
b bytes =
c characters =
d delimiter =
f fields =
n - .
- complement .
s only-delimited .
- output-delimiter =
z zero-terminated .
`),
	"head": numericFirst(gnu("head", help+`
c bytes =
n lines =
q quiet,silent .
v verbose .
z zero-terminated .
`)),
	"tail": numericFirst(gnu("tail", help+`
c bytes =
f follow ?
F - .
n lines =
- max-unchanged-stats =
- pid =
q quiet,silent .
- retry .
s sleep-interval =
v verbose .
z zero-terminated .
`)),
	"wc": gnu("wc", help+`
c bytes .
m chars .
l lines .
- files0-from =
L max-line-length .
w words .
`),
	"nl": gnu("nl", help+`
h header-numbering =
b body-numbering =
f footer-numbering =
v starting-line-number =
i line-increment =
p no-renumber .
l join-blank-lines =
s number-separator =
w number-width =
n number-format =
d section-delimiter =
`),
	"paste": gnu("paste", help+`
s serial .
d delimiters =
z zero-terminated .
`),
	"seq": negativeOperand(stopAtOperand(gnu("seq", help+`
f format =
s separator =
w equal-width .
`))),
	"stat": gnu("stat", help+`
L dereference .
f file-system .
c format =
- printf =
t terse .
- cached =
`),
	"uname": gnu("uname", help+`
a all .
s kernel-name,sysname .
n nodename .
r kernel-release,release .
v kernel-version .
m machine .
p processor .
i hardware-platform .
o operating-system .
`),
	"id": gnu("id", help+`
a - .
g group .
G groups .
n name .
r real .
u user .
z zero .
`),
	"whoami":   gnu("whoami", help),
	"nproc":    gnu("nproc", help+"- all .\n- ignore =\n"),
	"basename": stopAtOperand(gnu("basename", help+"a multiple .\ns suffix =\nz zero .\n")),
	"dirname":  gnu("dirname", help+"z zero .\n"),
	"comm": gnu("comm", help+`
1 - .
2 - .
3 - .
- check-order .
- nocheck-order .
- output-delimiter =
- total .
z zero-terminated .
`),
	"join": gnu("join", help+`
a - =
e - =
i ignore-case .
j - =
o - =
t - =
v - =
1 - =
2 - =
- check-order .
- nocheck-order .
- header .
z zero-terminated .
`),
	"fold": gnu("fold", help+digitFlags+`
b bytes .
s spaces .
w width =
`),
	"fmt": gnu("fmt", help+digitFlags+`
c crown-margin .
p prefix =
s split-only .
t tagged-paragraph .
u uniform-spacing .
w width =
g goal =
`),
	"od": gnu("od", help+`
A address-radix =
j skip-bytes =
N read-bytes =
S - =
- strings ?
t format =
v output-duplicates .
w width ?
- traditional .
- endian =
a - .
b - .
B - .
c - .
d - .
D - .
e - .
f - .
F - .
h - .
H - .
i - .
I - .
l - .
L - .
o - .
O - .
s - .
x - .
X - .
`),
	"md5sum":    sumTool("md5sum"),
	"sha1sum":   sumTool("sha1sum"),
	"sha256sum": sumTool("sha256sum"),
	"sha512sum": sumTool("sha512sum"),
	"cksum": gnu("cksum", help+`
a algorithm =
c check .
l length =
- tag .
- untagged .
z zero .
- ignore-missing .
- quiet .
- status .
- strict .
w warn .
- debug .
`),
	"tac": gnu("tac", help+`
b before .
r regex .
s separator =
`),
	"du": gnu("du", help+`
0 null .
a all .
- apparent-size .
B block-size =
b bytes .
c total .
D dereference-args .
H - .
d max-depth =
- files0-from =
h human-readable .
- inodes .
k - .
L dereference .
l count-links .
m - .
P no-dereference .
S separate-dirs .
- si .
s summarize .
t threshold =
- time ?
- time-style =
X exclude-from =
- exclude =
x one-file-system .
`),
	"df": gnu("df", help+`
a all .
B block-size =
h human-readable .
H si .
i inodes .
k - .
l local .
- no-sync .
- output ?
P portability .
- sync .
- total .
t type =
F - =
T print-type .
x exclude-type =
v - .
`),
	"readlink": gnu("readlink", help+`
f canonicalize .
e canonicalize-existing .
m canonicalize-missing .
n no-newline .
q quiet .
s silent .
v verbose .
z zero .
`),
	"realpath": gnu("realpath", help+`
e canonicalize-existing .
m canonicalize-missing .
L logical .
P physical .
q quiet .
- relative-to =
- relative-base =
s strip,no-symlinks .
z zero .
`),
	"sort": gnu("sort", help+`
b ignore-leading-blanks .
d dictionary-order .
f ignore-case .
g general-numeric-sort .
i ignore-nonprinting .
M month-sort .
h human-numeric-sort .
n numeric-sort .
R random-sort .
- random-source =
r reverse .
- sort =
V version-sort .
- batch-size =
c - .
C - .
- check ?
- compress-program = !runs a program
- debug .
- files0-from =
k key =
m merge .
o output = !writes a file
s stable .
S buffer-size =
t field-separator =
T temporary-directory = !writes temporary files there
- parallel =
u unique .
y - ?
z zero-terminated .
`),
	"uniq": withOperands(maxOperands("uniq", 1, "is written as the output file"), gnu("uniq", help+digitFlags+`
c count .
d repeated .
D - .
- all-repeated ?
f skip-fields =
- group ?
i ignore-case .
s skip-chars =
u unique .
z zero-terminated .
w check-chars =
`)),
	"base64": withOperands(maxOperands("base64", 1, "is an extra operand"), gnu("base64", help+`
d decode .
i ignore-garbage .
w wrap =
`)),
	"tr": stopAtOperand(gnu("tr", help+`
c complement .
C - .
d delete .
s squeeze-repeats .
t truncate-set1 .
`)),
	"grep": grepModel("grep"),
	"diff": gnu("diff", help+digitFlags+`
- normal .
q brief .
s report-identical-files .
c - .
C - =
- context ?
u - .
U - =
- unified ?
e ed .
f forward-ed .
n rcs .
y side-by-side .
W width =
- left-column .
- suppress-common-lines .
p show-c-function .
F show-function-line =
- label =
t expand-tabs .
T initial-tab .
- tabsize =
- suppress-blank-empty .
l paginate . !runs pr
r recursive .
- no-dereference .
N new-file .
P unidirectional-new-file .
- ignore-file-name-case .
- no-ignore-file-name-case .
x exclude =
X exclude-from =
S starting-file =
- from-file =
- to-file =
i ignore-case .
E ignore-tab-expansion .
Z ignore-trailing-space .
b ignore-space-change .
w ignore-all-space .
B ignore-blank-lines .
I ignore-matching-lines =
a text .
- strip-trailing-cr .
- binary .
- inhibit-hunk-merge .
D ifdef =
- line-format =
- old-line-format =
- new-line-format =
- unchanged-line-format =
- old-group-format =
- new-group-format =
- changed-group-format =
- unchanged-group-format =
d minimal .
- horizon-lines =
H speed-large-files .
- color ?
- palette =
h - .
L - =
v - .
`),
	"cmp": gnu("cmp", help+`
b print-bytes .
- print-chars .
i ignore-initial =
l verbose .
n bytes =
s quiet,silent .
v - .
`),
	"ls": gnu("ls", help+`
a all .
A almost-all .
- author .
b escape .
- block-size =
B ignore-backups .
c - .
C - .
- color ?
d directory .
D dired .
f - .
F classify ?
- file-type .
- format =
- full-time .
g - .
- group-directories-first .
G no-group .
h human-readable .
- si .
H dereference-command-line .
- dereference-command-line-symlink-to-dir .
- hide =
- hyperlink ?
- indicator-style =
i inode .
I ignore =
k kibibytes .
l - .
L dereference .
m - .
n numeric-uid-gid .
N literal .
o - .
p - .
q hide-control-chars .
- show-control-chars .
Q quote-name .
- quoting-style =
r reverse .
R recursive .
s size .
S - .
- sort =
t - .
T tabsize =
- time =
- time-style =
u - .
U - .
v - .
w width =
x - .
X - .
Z context .
- zero .
1 - .
`),
	"file": gnu("file", help+`
- apple .
b brief .
c checking-printout .
C compile . !writes a compiled magic file
d debug .
e exclude =
- exclude-quiet =
E - .
- extension .
f files-from =
F separator =
h no-dereference .
i mime .
- mime-type .
- mime-encoding .
k keep-going .
l list .
L dereference .
m magic-file =
n no-buffer .
N no-pad .
p preserve-date . !changes file times
P parameter =
r raw .
s special-files .
S no-sandbox . !turns off file's own sandbox
z uncompress . !runs decompression programs
Z uncompress-noreport . !runs decompression programs
0 print0 .
`),
	"column": gnu("column", `
t table .
n table-name =
O table-order =
N table-columns =
l table-columns-limit =
E table-noextreme =
d table-noheadings .
e table-header-repeat .
H table-hide =
R table-right =
T table-truncate =
W table-wrap =
L keep-empty-lines .
J json .
r tree =
i tree-id =
p tree-parent =
c output-width =
o output-separator =
s separator =
x fillrows .
h help .
V version .
`),
	"hexdump": gnu("hexdump", `
b one-byte-octal .
c one-byte-char .
C canonical .
d two-bytes-decimal .
o two-bytes-octal .
x two-bytes-hex .
L color ?
e format =
f format-file =
n length =
s skip =
v no-squeezing .
h help .
V version .
`),
	"rev": gnu("rev", `
h help .
V version .
`),
	"strings": gnu("strings", digitFlags+`
a all .
d data .
f print-file-name .
n bytes =
t radix =
- include-all-whitespace .
w - .
o - .
T target =
e encoding =
U unicode =
s output-separator =
h help .
v version .
V - .
`),
}

func sumTool(prog string) *gnuModel {
	return gnu(prog, help+`
b binary .
c check .
- tag .
t text .
z zero .
- ignore-missing .
- quiet .
- status .
- strict .
w warn .
`)
}

func grepModel(prog string) *gnuModel {
	return gnu(prog, help+digitFlags+`
E extended-regexp .
F fixed-strings,fixed-regexp .
G basic-regexp .
P perl-regexp .
X - =
e regexp =
f file =
i ignore-case .
y - .
- no-ignore-case .
w word-regexp .
x line-regexp .
z null-data .
s no-messages .
v invert-match .
V - .
m max-count =
b byte-offset .
n line-number .
- line-buffered .
H with-filename .
h no-filename .
- label =
o only-matching .
q quiet,silent .
- binary-files =
a text .
I - .
d directories =
D devices =
r recursive .
R dereference-recursive .
- include =
- exclude =
- exclude-from =
- exclude-dir =
L files-without-match .
l files-with-matches .
c count .
T initial-tab .
Z null .
A after-context =
B before-context =
C context =
- group-separator =
- no-group-separator .
- color,colour ?
U binary .
u unix-byte-offsets .
`)
}

func withOperands(check func(*parsedArgs) string, m *gnuModel) *gnuModel {
	m.operands = check
	return m
}

func numericFirst(m *gnuModel) *gnuModel    { m.numericFirst = true; return m }
func stopAtOperand(m *gnuModel) *gnuModel   { m.stopAtOperand = true; return m }
func negativeOperand(m *gnuModel) *gnuModel { m.negativeOperand = true; return m }
