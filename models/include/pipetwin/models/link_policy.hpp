// How a link serves the transfers placed on it: the resource policy every engine honours the
// same way (docs/design.md, "Links"). A hardware link file sets it; task graphs carry it per link.
#pragma once
#include <string>

namespace pipetwin {

enum class LinkPolicy {
  in_order,  // one transfer at a time, in the link's task order (a copy engine, a stream, a thread)
  shared,    // each transfer as soon as its dependencies end; concurrent ones share the bandwidth
};

const char* to_string(LinkPolicy policy);
LinkPolicy link_policy_from_string(const std::string& text);  // throws on an unknown name

}  // namespace pipetwin
