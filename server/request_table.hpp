#pragma once
// The gateway's book of requests in flight: which connection (routing id, and the connection
// that held it when the request came) and which client id each engine request belongs to. Ids
// are scoped to their connection, so a client can only reach its own requests, and a lost,
// replaced or revoked connection gives back exactly its requests to end.
// A plain class, used by the gateway thread alone.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.hpp"
#include "server/connection.hpp"

namespace hearth::server {

using clock_type = std::chrono::steady_clock;

struct flight {
  std::string peer;  //!< the connection's routing id
  std::string id;    //!< the client's id for it
  uint32_t prompt_tokens = 0;
  bool stream = true;
  bool orphaned = false;      //!< its connection is gone, or it was ended here: cancelled, its
                              //!< events are dropped
  std::string text = {};      //!< non-streaming: the completion so far
  bool tokenizing = false;    //!< its prompt is on the job thread: not yet in the engine
  bool cancel_asked = false;  //!< cancelled while tokenizing: ends when the tokens come
};

class request_table {
 public:
  //! The engine id of the request `id` sent on connection `peer`, if it is in flight.
  std::optional<request_id> lookup(const std::string& peer, const std::string& id) const;
  //! The connection that holds `peer` for the requests in flight there, if any.
  const connection* connection_of(const std::string& peer) const;
  //! `f.peer` must be held by `c` (or by nothing) in this table.
  void add(request_id rid, flight f, const connection& c, clock_type::time_point now);
  flight* find(request_id rid);
  //! Forgets a request that has ended; a connection with nothing left in flight is forgotten too.
  void finish(request_id rid);
  //! The connection is gone (or may no longer be served): its requests are marked orphaned
  //! (their events are dropped until their terminal one) and their engine ids returned, to be
  //! cancelled. The flights stay findable until finish().
  std::vector<request_id> orphan(const std::string& peer);

  //! The routing ids with requests in flight.
  std::vector<std::string> peers() const;
  //! Something was sent to `peer` at `now`.
  void sent(const std::string& peer, clock_type::time_point now);
  //! Connections with requests in flight that have been sent nothing for `interval`.
  std::vector<std::string> idle_peers(clock_type::time_point now, clock_type::duration interval) const;

  size_t size() const { return flights_.size(); }
  bool empty() const { return flights_.empty(); }
  //! Whether some connection still waits for a request's end (orphans wait for nobody).
  bool has_live() const { return !peers_.empty(); }

 private:
  struct peer_state {
    connection conn;
    std::map<std::string, request_id> requests;  // client id -> engine id
    clock_type::time_point last_sent;
  };
  std::unordered_map<request_id, flight> flights_;
  std::unordered_map<std::string, peer_state> peers_;
};

}  // namespace hearth::server
