// Every environment variable Braid reads, once each (no include guard: util/settings.h and
// util/settings.cc expand the list with their own BRAID_SETTING). The README's table of
// environment variables is generated from this list (tools/settings-table) and checked against
// it by the unit.settings_table test. Order: the README's.
//
// BRAID_SETTING(id, name, type, default, min, max, choices, default as the README says it, meaning)
//   type     kInt, kDouble (a number within [min, max]), kChoice (one of choices, "|"-separated),
//            kText (free text, its reader parses it); kForeign* for another tool's variable that
//            Braid also reads (read with the same type, never refused: its owner validates it)
//   default  the value when unset ("" for text: unset); numbers are written as C++ literals
//
// Adding one: a line here (in the README's order) and its reader calling settingInt/
// settingDouble/settingText(Setting::kId); then `tools/settings-table --write` rewrites the README.
BRAID_SETTING(kNcclDebug, "NCCL_DEBUG", kText, "", 0, 0, "", "off",
              "`WARN`, `INFO` (init, chosen algorithm per call), `TRACE`")
BRAID_SETTING(kNcclDebugSubsys, "NCCL_DEBUG_SUBSYS", kText, "", 0, 0, "", "`INIT,ENV,COLL`",
              "`INIT,COLL,SHM,NET,BOOTSTRAP,ENV,...`, `^` excludes")
BRAID_SETTING(kNcclDebugFile, "NCCL_DEBUG_FILE", kText, "", 0, 0, "", "stderr",
              "log file; `%h` host, `%p` pid")
BRAID_SETTING(kNcclAlgo, "NCCL_ALGO", kText, "", 0, 0, "",
              "the tuner's choice (docs/performance.md, \"Tuner\")",
              "`Ring`, `Tree`, `Direct`, `LowLatency`, `TwoShot`, `Rabenseifner`, "
              "`RecursiveDoubling`, `ZeroCopy`, `Bruck`, lists, `^Tree`, or per collective "
              "`allreduce:tree`; the tuner ranks what it leaves")
BRAID_SETTING(kNcclProto, "NCCL_PROTO", kText, "", 0, 0, "", "both",
              "NCCL's syntax (`Simple`, `^LL`, `allreduce:LL,Simple`); `LL` is the LowLatency "
              "allreduce (up to 4064 B between ranks sharing memory), `Simple` every other "
              "algorithm; a spec that leaves nothing for a call fails it with `ncclInvalidUsage`")
BRAID_SETTING(
    kTunerFile, "BRAID_TUNER_FILE", kText, "", 0, 0, "",
    "the per-host cache, else a calibration at init (docs/config.md)",
    "the cost model's constants per transport (`shm alpha_us=1.6 gbps=10.8 "
    "reduce_gbps=22.5`, one line per transport); the tuner ranks algorithms with them and "
    "`ncclGroupSimulateEnd` estimates with them")
BRAID_SETTING(kTunerCache, "BRAID_TUNER_CACHE", kText, "", 0, 0, "",
              "`${XDG_CACHE_HOME:-$HOME/.cache}/braid/tuner-<host>.txt`",
              "the per-host cache file of measured constants")
BRAID_SETTING(kTunerCalibrate, "BRAID_TUNER_CALIBRATE", kInt, 1, 0, 1, "", "`1`",
              "`0`: no cache, no calibration, the built-in constants")
BRAID_SETTING(kTunerAdapt, "BRAID_TUNER_ADAPT", kInt, 2048, 0, 1073741824, "", "`2048`",
              "calls per epoch of the adaptive allreduce choice (shared memory, a core per rank); "
              "`0`: the model's choice only, one algorithm per size")
BRAID_SETTING(kNcclShmDisable, "NCCL_SHM_DISABLE", kInt, 0, 0, 1, "", "0",
              "`1`: processes on one host talk TCP")
BRAID_SETTING(kNcclP2pDisable, "NCCL_P2P_DISABLE", kInt, 0, 0, 1, "", "0",
              "`1`: device buffers are staged through host memory instead of moving between GPUs "
              "over the P2P transport")
BRAID_SETTING(kNcclSocketIfname, "NCCL_SOCKET_IFNAME", kText, "", 0, 0, "", "first non-loopback",
              "interface prefixes (`eth`, `^docker`, `=eth0`); where it matches several interfaces "
              "(up to 4), each TCP connection spreads its sockets over all of them")
BRAID_SETTING(kNcclSocketFamily, "NCCL_SOCKET_FAMILY", kChoice, "AF_INET", 0, 0, "AF_INET|AF_INET6",
              "`AF_INET`", "the address family of the sockets Braid opens")
BRAID_SETTING(kNcclSocketFamilyV6, "NCCL_SOCKET_FAMILY_V6", kInt, 0, 0, 1, "", "0",
              "`1`: as `NCCL_SOCKET_FAMILY=AF_INET6`")
BRAID_SETTING(kNcclNetPlugin, "NCCL_NET_PLUGIN", kText, "", 0, 0, "", "`libnccl-net.so` if present",
              "net plugin libraries, comma separated: `X` opens `libnccl-net-X.so`, a path is "
              "opened as given, `none` loads none (`docs/networks.md`)")
BRAID_SETTING(kNcclNet, "NCCL_NET", kText, "", 0, 0, "",
              "first plugin with a device, else `Socket`",
              "the network across hosts by name: a plugin's (`UCX`, ...) or `Socket` (Braid's "
              "TCP); a name not loaded also tries `libnccl-net-<name>.so`; not found: init fails "
              "naming every plugin's fate")
BRAID_SETTING(kNcclCommId, "NCCL_COMM_ID", kText, "", 0, 0, "", "-",
              "`host:port` of the bootstrap root (rank 0 hosts it)")
BRAID_SETTING(kMasterAddr, "MASTER_ADDR", kForeignText, "", 0, 0, "", "-",
              "torchrun's: with `MASTER_PORT`, the bootstrap root's address when `NCCL_COMM_ID` is "
              "unset")
BRAID_SETTING(kMasterPort, "MASTER_PORT", kForeignText, "", 0, 0, "", "-",
              "torchrun's: see `MASTER_ADDR`")
BRAID_SETTING(kNcclHostId, "NCCL_HOSTID", kText, "", 0, 0, "", "hostname + boot id",
              "host identity override (shared memory only between equal ids)")
BRAID_SETTING(kCommSecret, "BRAID_COMM_SECRET", kText, "", 0, 0, "", "braidrun sets it",
              "32 hex digits proving membership (with `NCCL_COMM_ID`/`MASTER_*`)")
BRAID_SETTING(kTimeoutS, "BRAID_TIMEOUT_S", kDouble, 300, 0, 1e9, "", "300",
              "every wait (bootstrap, connect, data) fails after this many seconds, fractions "
              "allowed, 0: no deadline (`ncclRemoteError`; per communicator: "
              "`braidCommSetTimeout`)")
BRAID_SETTING(kFlightRecorderSize, "BRAID_FLIGHT_RECORDER_SIZE", kInt, 64, 0, 1048576, "", "64",
              "operations each communicator remembers for hang reports (0: off; "
              "`docs/diagnosis.md`)")
BRAID_SETTING(kSigusr1Dump, "BRAID_SIGUSR1_DUMP", kInt, 0, 0, 1, "", "0",
              "`1`: SIGUSR1 writes every live communicator's flight recorder to the log")
BRAID_SETTING(kTransports, "BRAID_TRANSPORTS", kText, "", 0, 0, "", "all",
              "allowed transports in priority order: `local,shm,net,tcp` (`net`: the plugin "
              "network), plus `p2p` for device buffers between GPUs of one host")
BRAID_SETTING(kConnect, "BRAID_CONNECT", kChoice, "auto", 0, 0, "auto|all|neighbours", "`auto`",
              "`auto`: every pair at init up to 32 ranks; beyond, the ring's, trees' and "
              "hierarchical neighbours at init and any other pair when a send or receive first "
              "needs it (`docs/scale.md`); `all`: every pair at init; `neighbours`: neighbours "
              "only (sends to others fail)")
BRAID_SETTING(kConnectAllMaxRanks, "BRAID_CONNECT_ALL_MAX_RANKS", kInt, 32, 1, 16777216, "", "`32`",
              "under `auto`, the most ranks that still connect every pair at init (set it alike "
              "on every rank)")
BRAID_SETTING(kSlotBytes, "BRAID_SLOT_BYTES", kInt, 524288, 4096, 67108864, "", "512 KiB",
              "FIFO slot size per connection, a multiple of 64")
BRAID_SETTING(kNslots, "BRAID_NSLOTS", kInt, 8, 2, 64, "", "8", "FIFO depth per connection")
BRAID_SETTING(kZeroCopyMinBytes, "BRAID_ZERO_COPY_MIN_BYTES", kInt, 1048576, 0,
              4611686018427387904.0, "", "1 MiB",
              "smallest shared-memory AllReduce, AllGather or ReduceScatter (larger buffer) that "
              "checks for registered buffers on every rank and, if so, reads them in place")
BRAID_SETTING(kRingOrder, "BRAID_RING_ORDER", kChoice, "host", 0, 0, "host|rank", "`host`",
              "`host`: rings (and trees) visit each host's ranks one after another whatever the "
              "numbering; `rank`: rank order (`docs/scale.md`)")
BRAID_SETTING(kRings, "BRAID_RINGS", kInt, 2, 1, 2, "", "`2`",
              "rings the ring allreduce, reduce-scatter, allgather, broadcast and reduce run side "
              "by side across hosts: `2`, the second with each host's ranks in reverse order, so "
              "two ranks of every host send to other hosts (where a step would carry a slot or "
              "more: an allreduce of ranks x slot bytes, a block or a broadcast of a slot); `1`: "
              "one ring (`docs/scale.md`)")
BRAID_SETTING(kZeroCopyShared, "BRAID_ZERO_COPY_SHARED", kInt, 1, 0, 1, "", "1",
              "`0`: the zero-copy AllReduce runs one block per rank with two barriers instead of "
              "sharing its chunks out to whichever ranks run (rank 0's setting decides for every "
              "rank)")
BRAID_SETTING(kSpin, "BRAID_SPIN", kInt, -1, -1, 1073741824, "",
              "20000; 50 when a host's ranks outnumber its cores; a wait on sockets spins at most "
              "20 us, and not at all when its sender runs on the waiter's core (then, where a core "
              "is free for every rank, it sleeps at once so its wake-up moves it)",
              "polls before a waiting rank sleeps (on a futex, or on its sockets for TCP "
              "receives); -1: the default")
BRAID_SETTING(kTcpSockets, "BRAID_TCP_SOCKETS", kInt, 2, 1, 64, "", "2",
              "sockets per TCP connection (also `NCCL_NSOCKS_PERTHREAD`; this one wins)")
BRAID_SETTING(kNcclNsocksPerthread, "NCCL_NSOCKS_PERTHREAD", kInt, 2, 1, 64, "", "2",
              "as `BRAID_TCP_SOCKETS`")
BRAID_SETTING(kTcpBuffer, "BRAID_TCP_BUFFER", kInt, 4194304, 0, 1073741824, "", "4 MiB",
              "socket buffer bytes of each TCP socket")
BRAID_SETTING(kTcpInlineBytes, "BRAID_TCP_INLINE_BYTES", kInt, 524288, 0, 1073741824, "", "512 KiB",
              "TCP slots up to this size leave from the calling thread when nothing is queued "
              "before them (larger ones, and whatever the socket has no room for, from the "
              "connection's thread); 0: always the connection's thread")
BRAID_SETTING(kKernelIsa, "BRAID_KERNEL_ISA", kChoice, "avx512", 0, 0, "avx512|avx2|scalar",
              "best available", "cap the CPU kernels: `avx512`, `avx2`, `scalar`")
BRAID_SETTING(kCudaDisable, "BRAID_CUDA_DISABLE", kInt, 0, 0, 1, "", "0",
              "`1`: keeps a CUDA build off the GPU")
BRAID_SETTING(kDeviceKernels, "BRAID_DEVICE_KERNELS", kInt, 1, 0, 1, "", "1",
              "`0`: device buffers between GPUs of one host move by host-driven copies instead of "
              "Braid's CUDA kernels (docs/cuda.md)")
BRAID_SETTING(kDeviceChannels, "BRAID_DEVICE_CHANNELS", kInt, 0, 0, 32, "", "from the GPU",
              "channels (thread blocks) per device collective; 0: from the GPU's multiprocessors "
              "(docs/cuda.md)")
BRAID_SETTING(kDeviceSlots, "BRAID_DEVICE_SLOTS", kInt, 4, 2, 64, "", "4",
              "device FIFO depth per channel and peer")
BRAID_SETTING(kDeviceSlotBytes, "BRAID_DEVICE_SLOT_BYTES", kInt, 131072, 128, 16777216, "",
              "128 KiB", "device FIFO slot bytes of the Simple protocol (rounded down to 128)")
BRAID_SETTING(kDeviceLlBytes, "BRAID_DEVICE_LL_BYTES", kInt, 8192, 16, 16777216, "", "8 KiB",
              "device FIFO slot bytes of the LL protocol (rounded down to 16)")
BRAID_SETTING(kDeviceLl128Bytes, "BRAID_DEVICE_LL128_BYTES", kInt, 65536, 256, 16777216, "",
              "64 KiB",
              "device FIFO slot bytes of the LL128 protocol (rounded down to 256; 15/16 data)")
BRAID_SETTING(kNcclP2pLlThreshold, "NCCL_P2P_LL_THRESHOLD", kInt, 16384, 0, 1073741824, "", "16384",
              "device point-to-point transfers up to this many bytes go under LL")
BRAID_SETTING(kP2pChannelsPerPeer, "BRAID_P2P_CHANNELS_PER_PEER", kInt, 2, 1, 32, "",
              "2 (1 past 8 ranks)", "device point-to-point channels per peer and direction")
BRAID_SETTING(kCudaDeviceMaxConnections, "CUDA_DEVICE_MAX_CONNECTIONS", kForeignInt, 8, 1, 32, "",
              "8",
              "CUDA's hardware queues per GPU: in-process ranks beyond it run device collectives "
              "as host steps (docs/cuda.md)")
BRAID_SETTING(kXdgCacheHome, "XDG_CACHE_HOME", kForeignText, "", 0, 0, "", "`$HOME/.cache`",
              "where the tuner's per-host cache lives (see `BRAID_TUNER_CACHE`)")
BRAID_SETTING(kHome, "HOME", kForeignText, "", 0, 0, "", "-",
              "the cache's folder when `XDG_CACHE_HOME` is unset")
