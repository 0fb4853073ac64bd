// The network KV travels by under prefill/decode disaggregation: every pod's link (its NICs
// together), full duplex, so what a pod receives and what it sends are separate links. A read
// of a prompt's KV from a prefill pod crosses the prefill pod's outgoing link and the decode
// pod's incoming one. Concurrent reads share the links as RDMA transfers over one NIC do, fairly
// (fair_share.h). A read's rate is the fraction of its reader's link it runs at; on the source
// link it weighs its share (a TP 1 reader of a TP 4 prefill pod reaches one of its four NICs: a
// quarter), so four such reads run at once at full speed and a fifth slows all five to 4/5.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/fleet/fair_share.h"

namespace fleetsim {

class KvNetwork {
 public:
  using ReadId = FairShare::JobId;  // 0: no read

  explicit KvNetwork(EventLoop& loop) : links_(loop) {}

  // Starts a read into pod `reader` from pod `source` (-1: no shared source link) that takes
  // `solo_ns` at full speed, keeping `source_share` of the source's link busy meanwhile; `done`
  // runs, as an event, when it has all arrived.
  ReadId start(int reader, int source, double source_share, TimeNs solo_ns,
               std::function<void()> done) {
    std::vector<FairShare::Use> uses{{incoming(reader), 1.0}};
    if (source >= 0) uses.push_back({outgoing(source), source_share});
    return links_.start(std::move(uses), solo_ns, std::move(done));
  }
  // Drops a read under way (its reader crashed); false when it is not under way.
  bool cancel(ReadId id) { return links_.cancel(id); }
  // The fraction of full speed a read runs at now (0 when it is not under way).
  double rate(ReadId id) const { return links_.rate(id); }
  int reads() const { return links_.jobs(); }

 private:
  static std::int64_t incoming(int pod) { return 2 * std::int64_t{pod}; }
  static std::int64_t outgoing(int pod) { return 2 * std::int64_t{pod} + 1; }

  FairShare links_;
};

}  // namespace fleetsim
