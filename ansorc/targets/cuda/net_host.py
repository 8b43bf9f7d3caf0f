"""The host side of a model's CUDA library (net_library.py): `<m>_init` uploads the checked weights file once and
allocates the device arena; `<m>_run` captures the model's launches into one CUDA graph per set of pointers
and replays it (launch overhead paid once), launching directly where a stream cannot be captured."""
from __future__ import annotations

from string import Template

HOST = Template(r"""
static unsigned char* ansorc_dev_w = NULL;      /* the weights file's bytes on the device */
static unsigned char* ansorc_dev_arena = NULL;  /* intermediates and workspaces */
static unsigned char* ansorc_dev_io = NULL;     /* staging of ${m}_run_host's arrays */
static cudaStream_t ansorc_stream = NULL;       /* blocking: ordered after the legacy default stream's work */
static cudaGraphExec_t ansorc_graph = NULL;
static void* ansorc_graph_key[$nkey];
static int ansorc_dev_ready = 0;
static cudaError_t ansorc_last = cudaSuccess;
static const unsigned long long ansorc_io_bytes[$nio1] = {$io_bytes};

static int ansorc_cuda_failed(cudaError_t e) {
  if (e == cudaSuccess) return 0;
  ansorc_last = e;
  return 1;
}

extern "C" const char* ${m}_error(void) { return cudaGetErrorString(ansorc_last); }

extern "C" void ${m}_free(void) {
  if (ansorc_graph) cudaGraphExecDestroy(ansorc_graph);
  if (ansorc_stream) cudaStreamDestroy(ansorc_stream);
  cudaFree(ansorc_dev_w);
  cudaFree(ansorc_dev_arena);
  cudaFree(ansorc_dev_io);
  ansorc_graph = NULL; ansorc_stream = NULL;
  ansorc_dev_w = ansorc_dev_arena = ansorc_dev_io = NULL;
  ansorc_dev_ready = 0;
}

extern "C" int ${m}_init(const char* weights_path) {
  ${m}_free();
  int rc = ${m}_host_init(weights_path);   /* reads and checks the file (digest, table, CRC) into host memory */
  unsigned long long io = 0;
  for (int k = 0; k < $nio; ++k) io += (ansorc_io_bytes[k] + 255ull) / 256ull * 256ull;
  if (rc == 0 && (ansorc_cuda_failed(cudaMalloc((void**)&ansorc_dev_w, ${file_size}ull)) ||
                  ansorc_cuda_failed(cudaMalloc((void**)&ansorc_dev_arena, ${arena}ull + 64ull)) ||
                  ansorc_cuda_failed(cudaMalloc((void**)&ansorc_dev_io, io + 256ull)) ||
                  ansorc_cuda_failed(cudaStreamCreate(&ansorc_stream)) ||
                  ansorc_cuda_failed(cudaMemcpy(ansorc_dev_w, ansorc_net_blob, ${file_size}ull,
                                                cudaMemcpyHostToDevice))))
    rc = $err_cuda;
  ${m}_host_free();   /* the device holds the weights now */
  if (rc != 0) { ${m}_free(); return rc; }
  ansorc_dev_ready = 1;
  return 0;
}

static void ansorc_launch_all($params_s) {
$launches
}

/* Capture the launches into a graph for these pointers and this stream; 0 when it could not be made. */
static int ansorc_capture($params_s) {
  cudaGraph_t g = NULL;
  if (ansorc_graph) { cudaGraphExecDestroy(ansorc_graph); ansorc_graph = NULL; }
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) { cudaGetLastError(); return 0; }
  ansorc_launch_all($args_s);
  if (cudaStreamEndCapture(s, &g) != cudaSuccess || cudaGraphInstantiate(&ansorc_graph, g, 0) != cudaSuccess) {
    if (g) cudaGraphDestroy(g);
    ansorc_graph = NULL;
    cudaGetLastError();
    return 0;
  }
  cudaGraphDestroy(g);
  return 1;
}

extern "C" int ${m}_run($params_v) {
  if (!ansorc_dev_ready) return 7;
  cudaStream_t s = stream_arg ? (cudaStream_t)stream_arg : ansorc_stream;
  void* key[$nkey] = {$key_items};
  if (!ansorc_graph || memcmp(key, ansorc_graph_key, sizeof key) != 0) {
    if (ansorc_capture($args_s)) memcpy(ansorc_graph_key, key, sizeof key);
  }
  if (ansorc_graph && memcmp(key, ansorc_graph_key, sizeof key) == 0) {
    if (ansorc_cuda_failed(cudaGraphLaunch(ansorc_graph, s))) return $err_cuda;
  } else {
    ansorc_launch_all($args_s);   /* this stream cannot be captured (the legacy default stream, say) */
  }
  if (ansorc_cuda_failed(cudaGetLastError())) return $err_cuda;
  if (!stream_arg && ansorc_cuda_failed(cudaStreamSynchronize(s))) return $err_cuda;
  return 0;
}

extern "C" int ${m}_run_packed(void** args, void* stream_arg) {
  return ${m}_run($casts_v);
}

/* host arrays: inputs copied in, the model run on the library's stream, outputs copied out */
extern "C" int ${m}_run_host(void** host_args) {
  if (!ansorc_dev_ready) return 7;
  void* dev[$nio1];
  unsigned long long at = 0;
  for (int k = 0; k < $nio; ++k) {
    dev[k] = ansorc_dev_io + at;
    at += (ansorc_io_bytes[k] + 255ull) / 256ull * 256ull;
    if (k < $nin && ansorc_cuda_failed(cudaMemcpyAsync(dev[k], host_args[k], ansorc_io_bytes[k],
                                                       cudaMemcpyHostToDevice, ansorc_stream))) return $err_cuda;
  }
  int rc = ${m}_run_packed(dev, (void*)ansorc_stream);
  if (rc != 0) return rc;
  for (int k = $nin; k < $nio; ++k)
    if (ansorc_cuda_failed(cudaMemcpyAsync(host_args[k], dev[k], ansorc_io_bytes[k], cudaMemcpyDeviceToHost,
                                           ansorc_stream))) return $err_cuda;
  return ansorc_cuda_failed(cudaStreamSynchronize(ansorc_stream)) ? $err_cuda : 0;
}
""")


def host_code(m: str, params: list, launches: list, file_size: int, arena: int, io_bytes: list, n_in: int,
              err_cuda: int) -> str:
    names = [p.rsplit("*", 1)[1].strip() for p in params]
    casts = [f"({p.rsplit('*', 1)[0].strip()}*)args[{k}]" for k, p in enumerate(params)]
    return HOST.substitute(
        m=m, params_s=", ".join([*params, "cudaStream_t s"]), params_v=", ".join([*params, "void* stream_arg"]),
        args_s=", ".join([*names, "s"]), casts_v=", ".join([*casts, "stream_arg"]),
        launches="\n".join(launches) or "  (void)s;",
        file_size=file_size, arena=arena, nio=len(io_bytes), nio1=max(1, len(io_bytes)), nin=n_in,
        io_bytes=", ".join(f"{n}ull" for n in io_bytes) or "0", err_cuda=err_cuda,
        nkey=len(names) + 1, key_items=", ".join([f"(void*){n}" for n in names] + ["(void*)s"]),
    )


__all__ = ["host_code"]
