#include "actors/messages.hpp"

namespace hearth {

void add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<worker_info>("worker_info");
  cfg.add_message_type<request>("request");
  cfg.add_message_type<request_event>("request_event");
  cfg.add_message_type<step>("step");
  cfg.add_message_type<step_result>("step_result");
  cfg.add_message_type<request_record>("request_record");
  cfg.add_message_type<std::vector<request_record>>("std::vector<request_record>");
  cfg.add_message_type<scheduler_gauges>("scheduler_gauges");
  cfg.add_message_type<metrics_snapshot>("metrics_snapshot");
  cfg.add_message_type<step_sample>("step_sample");
  cfg.add_message_type<std::vector<request_id>>("std::vector<request_id>");
  cfg.add_message_type<std::vector<uint32_t>>("std::vector<uint32_t>");
  cfg.add_message_type<std::vector<tenant_config>>("std::vector<tenant_config>");
}

}  // namespace hearth
