// Runs Ollama v0.12.10's own estimateGPULayers (llm/memory.go, copied unchanged but for its
// package line) on a GGUF file and GPUs given on the command line; prints the estimate as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/fs/ggml"
	"github.com/ollama/ollama/ml"
)

func main() {
	model := flag.String("model", "", "GGUF file")
	projector := flag.String("projector", "", "projector GGUF file")
	free := flag.String("free", "", "free bytes per GPU, comma-separated")
	library := flag.String("library", "CUDA", "CUDA or Metal")
	numCtx := flag.Int("num-ctx", 4096, "num_ctx")
	numBatch := flag.Int("num-batch", 512, "num_batch")
	numGPU := flag.Int("num-gpu", -1, "num_gpu")
	parallel := flag.Int("parallel", 1, "num_parallel")
	flag.Parse()
	f, err := os.Open(*model)
	if err != nil {
		panic(err)
	}
	g, err := ggml.Decode(f, 1024)
	if err != nil {
		panic(err)
	}
	var gpus []ml.DeviceInfo
	for i, s := range strings.Split(*free, ",") {
		if s == "" {
			continue
		}
		n, _ := strconv.ParseUint(s, 10, 64)
		d := ml.DeviceInfo{}
		d.Library = *library
		d.ID = fmt.Sprint(i)
		d.FreeMemory = n
		d.TotalMemory = n
		d.DriverMajor = 12
		gpus = append(gpus, d)
	}
	opts := api.DefaultOptions()
	opts.NumCtx, opts.NumBatch, opts.NumGPU = *numCtx, min(*numBatch, *numCtx), *numGPU
	var projectors []string
	if *projector != "" {
		projectors = append(projectors, *projector)
	}
	e := estimateGPULayers(gpus, g, projectors, opts, *parallel)
	fullFit := len(pickBestFullFitByLibrary(g, *model, projectors, nil, opts, gpus, *parallel))
	kv, partial, full := g.GraphSize(uint64(opts.NumCtx), uint64(min(opts.NumCtx, opts.NumBatch)), *parallel, "", false)
	out, _ := json.Marshal(map[string]any{
		"layers": e.Layers, "graph": e.Graph, "vram": e.VRAMSize, "total": e.TotalSize,
		"split": e.TensorSplit, "per_gpu": e.GPUSizes, "kv": kv, "partial": partial, "full": full,
		"full_fit_gpus": fullFit,
	})
	fmt.Println(string(out))
}
