#include "server/request_table.hpp"

#include <cassert>

namespace hearth::server {

std::optional<request_id> request_table::lookup(const std::string& peer, const std::string& id) const {
  const auto p = peers_.find(peer);
  if (p == peers_.end()) return std::nullopt;
  const auto r = p->second.requests.find(id);
  if (r == p->second.requests.end()) return std::nullopt;
  return r->second;
}

const connection* request_table::connection_of(const std::string& peer) const {
  const auto p = peers_.find(peer);
  return p == peers_.end() ? nullptr : &p->second.conn;
}

void request_table::add(request_id rid, flight f, const connection& c, clock_type::time_point now) {
  auto [p, fresh] = peers_.try_emplace(f.peer);
  if (fresh) p->second = {c, {}, now};
  assert(p->second.conn.serial == c.serial &&
         "request_table::add: the routing id is held by another connection");
  p->second.requests[f.id] = rid;
  flights_.emplace(rid, std::move(f));
}

flight* request_table::find(request_id rid) {
  const auto it = flights_.find(rid);
  return it == flights_.end() ? nullptr : &it->second;
}

void request_table::finish(request_id rid) {
  const auto it = flights_.find(rid);
  if (it == flights_.end()) return;
  if (!it->second.orphaned) {
    const auto p = peers_.find(it->second.peer);
    if (p != peers_.end()) {
      p->second.requests.erase(it->second.id);
      if (p->second.requests.empty()) peers_.erase(p);
    }
  }
  flights_.erase(it);
}

std::vector<request_id> request_table::orphan(const std::string& peer) {
  std::vector<request_id> ids;
  const auto p = peers_.find(peer);
  if (p == peers_.end()) return ids;
  for (const auto& [id, rid] : p->second.requests) {
    flights_.at(rid).orphaned = true;
    ids.push_back(rid);
  }
  peers_.erase(p);
  return ids;
}

std::vector<std::string> request_table::peers() const {
  std::vector<std::string> out;
  out.reserve(peers_.size());
  for (const auto& [peer, st] : peers_) out.push_back(peer);
  return out;
}

void request_table::sent(const std::string& peer, clock_type::time_point now) {
  const auto p = peers_.find(peer);
  if (p != peers_.end()) p->second.last_sent = now;
}

std::vector<std::string> request_table::idle_peers(clock_type::time_point now,
                                                   clock_type::duration interval) const {
  std::vector<std::string> out;
  for (const auto& [peer, st] : peers_)
    if (now - st.last_sent >= interval) out.push_back(peer);
  return out;
}

}  // namespace hearth::server
