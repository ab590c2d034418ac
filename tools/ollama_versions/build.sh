#!/bin/bash
# Builds a harness of one Ollama release's own EstimateGPULayers (llm/memory.go and the GGUF reader
# and GraphSize it calls, copied unchanged from the tag) behind a small main that prints the
# estimate as JSON; the gpu/discover package (cgo) is a stub with the fields memory.go reads, and
# x/sync/errgroup and x/exp/maps minimal local copies (no module proxy). Used by record.py.
# usage: build.sh TAG OLLAMA_GIT_DIR BUILD_DIR   (GO: the go binary, 1.24 or later)
set -e
T=$1; R=$2; H=$3/go-$T
rm -rf $H; mkdir -p $H/cmd/est $H/xsync/errgroup
cd $R  # a bare git directory (the fetch tool's mirror) or a clone
put() { mkdir -p $H/$(dirname $1); git show $T:$1 > $H/$1; }
put api/types.go; for f in $(git ls-tree --name-only $T format/ | grep -v _test); do put $f; done
put envconfig/config.go
for f in $(git ls-tree --name-only $T types/model/ 2>/dev/null | grep "\.go$" | grep -v _test); do put $f; done
if git cat-file -e $T:fs/ggml/ggml.go 2>/dev/null; then
  for f in $(git ls-tree --name-only $T fs/ggml/ fs/util/bufioutil/ | grep -v _test); do put $f; done
  G=fs/ggml
else
  for f in ggml.go gguf.go filetype.go ggla.go; do git cat-file -e $T:llm/$f 2>/dev/null && put llm/$f; done
  put util/bufioutil/buffer_seeker.go; G=llm
fi
put llm/memory.go
DISC=discover; git cat-file -e $T:discover/types.go 2>/dev/null || DISC=gpu
mkdir -p $H/$DISC
cat > $H/$DISC/stub.go <<EOG
// Stub of Ollama's $DISC package: the fields and calls llm/memory.go reads (test harness).
package $DISC

type GpuInfo struct {
	Library, Variant, ID, Name, Compute string
	DriverMajor, DriverMinor             int
	TotalMemory, FreeMemory, MinimumMemory uint64
}

type GpuInfoList []GpuInfo

func (l GpuInfoList) ByLibrary() []GpuInfoList { return []GpuInfoList{l} }

func (l GpuInfoList) FlashAttentionSupported() bool { return true }

func GetGPUInfo() GpuInfoList { return GpuInfoList{{Library: "cuda", DriverMajor: 12}} }

type ByFreeMemory []GpuInfo

func (a ByFreeMemory) Len() int           { return len(a) }
func (a ByFreeMemory) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a ByFreeMemory) Less(i, j int) bool { return a[i].FreeMemory < a[j].FreeMemory }
EOG
cat > $H/xsync/errgroup/errgroup.go <<'EOG'
// Minimal errgroup (sequential) for the harness: no module proxy here.
package errgroup

type Group struct{ err error }

func (g *Group) SetLimit(int) {}
func (g *Group) Go(f func() error) {
	if err := f(); err != nil && g.err == nil {
		g.err = err
	}
}
func (g *Group) Wait() error { return g.err }
EOG
printf 'module golang.org/x/sync\n\ngo 1.22\n' > $H/xsync/go.mod
mkdir -p $H/xexp/maps
cat > $H/xexp/maps/maps.go <<'EOG'
// Minimal x/exp/maps (Keys, Values as slices) for the harness.
package maps

func Keys[M ~map[K]V, K comparable, V any](m M) []K {
	r := make([]K, 0, len(m))
	for k := range m {
		r = append(r, k)
	}
	return r
}

func Values[M ~map[K]V, K comparable, V any](m M) []V {
	r := make([]V, 0, len(m))
	for _, v := range m {
		r = append(r, v)
	}
	return r
}
EOG
printf 'module golang.org/x/exp\n\ngo 1.22\n' > $H/xexp/go.mod
printf 'module github.com/ollama/ollama\n\ngo 1.24\n\nrequire (\n\tgolang.org/x/sync v0.0.0\n\tgolang.org/x/exp v0.0.0\n)\n\nreplace golang.org/x/sync => ./xsync\n\nreplace golang.org/x/exp => ./xexp\n' > $H/go.mod
# projectorMemoryRequirements lived in llm/server.go before v0.4.0
if ! grep -q "func projectorMemoryRequirements" $H/llm/memory.go; then
  { echo "package llm"; echo 'import "os"'; git show $T:llm/server.go | awk '/^func projectorMemoryRequirements/,/^}/'; } > $H/llm/projector.go
fi
cat $H/llm/memory.go | grep -q "numParallel int) MemoryEstimate" && NP=", 1" || NP=""
EST=$(grep -o "^func [Ee]stimateGPULayers" $H/llm/memory.go | awk '{print $2}')
GPUS="$DISC.GpuInfo"
cat > $H/llm/harness.go <<EOG
package llm

// Dump: the estimate and the fields its log prints (test harness, not Ollama's).
func Dump(e MemoryEstimate) map[string]any {
	return map[string]any{"layers": e.Layers, "graph": e.Graph, "vram": e.VRAMSize, "total": e.TotalSize,
		"kv": e.kv, "full": e.graphFullOffload, "partial": e.graphPartialOffload, "per_gpu": e.GPUSizes}
}

func Run(gpus []$GPUS, f *GGMLT, opts OptionsT) MemoryEstimate { return $EST(gpus, f, nil, opts$NP) }
EOG
if [ $G = fs/ggml ]; then
  sed -i "s#^package llm#package llm\n\nimport (\n\t\"github.com/ollama/ollama/api\"\n\t\"github.com/ollama/ollama/$DISC\"\n\t\"github.com/ollama/ollama/fs/ggml\"\n)\n\ntype GGMLT = ggml.GGML\ntype OptionsT = api.Options#" $H/llm/harness.go
  DEC='g, err := ggml.Decode(f, 1024)'; IMP='"github.com/ollama/ollama/fs/ggml"'
  grep -q "^func Decode(.*(\*GGML, int64, error)" $H/fs/ggml/ggml.go && DEC='g, _, err := ggml.Decode(f, 1024)'
else
  sed -i "s#^package llm#package llm\n\nimport (\n\t\"github.com/ollama/ollama/api\"\n\t\"github.com/ollama/ollama/$DISC\"\n)\n\ntype GGMLT = GGML\ntype OptionsT = api.Options#" $H/llm/harness.go
  DEC='g, _, err := llm.DecodeGGML(f, 1024)'; IMP=''
fi
cat > $H/cmd/est/main.go <<EOG
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/$DISC"
	"github.com/ollama/ollama/llm"
	$IMP
)

func main() {
	model := flag.String("model", "", "GGUF file")
	free := flag.String("free", "", "free bytes per GPU")
	numCtx := flag.Int("num-ctx", 2048, "num_ctx (times num_parallel, as the scheduler passes it)")
	numGPU := flag.Int("num-gpu", -1, "num_gpu")
	flag.Parse()
	f, err := os.Open(*model)
	if err != nil {
		panic(err)
	}
	$DEC
	if err != nil {
		panic(err)
	}
	var gpus []$DISC.GpuInfo
	for _, s := range strings.Split(*free, ",") {
		n, _ := strconv.ParseUint(s, 10, 64)
		gpus = append(gpus, $DISC.GpuInfo{Library: "cuda", DriverMajor: 12, FreeMemory: n, MinimumMemory: 457 * 1024 * 1024})
	}
	opts := api.DefaultOptions()
	opts.NumCtx, opts.NumGPU = *numCtx, *numGPU
	out, _ := json.Marshal(llm.Dump(llm.Run(gpus, g, opts)))
	fmt.Println(string(out))
}
EOG
cd $H && GOFLAGS=-mod=mod GOPROXY=off GOCACHE=$3/gocache GOPATH=$3/gopath ${GO:-go} build -o est ./cmd/est
echo built $H/est
