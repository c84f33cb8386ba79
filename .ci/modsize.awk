# Sums the code and read-only data of a Go binary by module, from `go tool nm -size`:
# a view of what each dependency costs a robot (make size).
{
  size = $2; kind = $3; name = $4
  if (kind !~ /^[TtRr]$/) next
  if (name ~ /^runtime\.(text|etext|rodata|erodata|noptrdata|enoptrdata|data|edata|bss|ebss|noptrbss|enoptrbss|types|etypes|pclntab|epclntab|symtab|esymtab|gcdata|gcbss|end|firstmoduledata|covctrs|ecovctrs|itablink|typelink)$/) next
  if (name ~ /^(type:|go:|\$)/) { mod = "(type data, func info)"; s[mod] += size; next }
  n = name; i = match(n, /\/[^\/]*$/); head = ""; tail = n
  if (i > 0) { head = substr(n, 1, i); tail = substr(n, i + 1) }
  j = index(tail, "."); if (j > 0) tail = substr(tail, 1, j - 1)
  pkg = head tail
  split(pkg, p, "/")
  if (p[1] !~ /\./) mod = "Go standard library and runtime"
  else if (p[1] == "github.com" || p[1] == "golang.org" || p[1] == "go.uber.org") mod = p[1] "/" p[2] "/" p[3]
  else if (p[1] == "periph.io" || p[1] == "go.yaml.in" || p[1] == "gocv.io") mod = p[1] "/" p[2] "/" p[3]
  else mod = p[1] "/" p[2]
  if (mod ~ /^github.com\/chorus-robotics\/chorus/) mod = "github.com/chorus-robotics/chorus (Chorus)"
  s[mod] += size; total += size
}
END { for (k in s) printf "%7.2f MB  %s\n", s[k] / 1e6, k }
