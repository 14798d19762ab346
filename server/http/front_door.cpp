#include "server/http/front_door.hpp"

namespace hearth::http {

namespace {

// cpp-httplib keeps its listening socket protected; a derived class may name it on any server.
struct listening_socket : httplib::Server {
  static int of(httplib::Server& s) { return s.*(&listening_socket::svr_sock_); }
};

}  // namespace

bool widen_backlog(httplib::Server& server) {
  return ::listen(listening_socket::of(server), SOMAXCONN) == 0;
}

httplib::Server::HandlerWithContentReader limited_body(
    size_t limit, std::function<void(const httplib::Request&, httplib::Response&)> handle) {
  return [limit, handle = std::move(handle)](const httplib::Request& req, httplib::Response& res,
                                             const httplib::ContentReader& read) {
    const auto refuse = [&](int status) { res.status = status; };
    if (req.is_multipart_form_data()) return refuse(415);
    std::string body;
    bool over = false;
    const bool ok = read([&](const char* data, size_t n) {
      over = n > limit - body.size();
      if (!over) body.append(data, n);
      return !over;
    });
    if (!ok) return refuse(over || res.status == 413 ? 413 : 400);
    httplib::Request with_body = req;
    with_body.body = std::move(body);
    handle(with_body, res);
  };
}

api_error front_door_error(int status, std::string_view method, std::string_view path) {
  switch (status) {
    case 400:
      return bad_field(
          "the request could not be read: a malformed request line, header or chunked or compressed "
          "body, or a header line over 8 KiB");
    case 413:
      return {413, {"too_long", "the body is larger than the server's limit (after decoding)"}};
    case 414:
      return {414, {"too_long", "the request's URI is longer than 8 KiB"}};
    case 415:
      return {415, {wire::code::bad_request, "multipart bodies are not read: send JSON"}};
    default:
      break;
  }
  std::string what = "no route ";
  what += method.substr(0, 16);
  what += ' ';
  what += path.substr(0, 128);
  return {status, {"not_found", std::move(what)}};
}

}  // namespace hearth::http
