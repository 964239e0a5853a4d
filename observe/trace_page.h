// `tutti trace html`: a page that draws a timeline in a browser, self-contained (the
// timeline embedded as JSON, the script and styles inline), so that it can be mailed or
// attached to an issue and opened offline.
#pragma once

#include <string>

#include "observe/timeline.h"

namespace tutti::observe {

std::string trace_page(const Timeline& timeline, const std::string& title);

}  // namespace tutti::observe
