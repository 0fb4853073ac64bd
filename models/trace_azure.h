// Reader of the Azure LLM inference traces (Azure/AzurePublicDataset :
// AzureLLMInferenceDataset2023.md; data/AzureLLMInferenceTrace_{conv,code}.csv, the Splitwise
// ISCA'24 traces): CSV with a header row naming TIMESTAMP, ContextTokens, GeneratedTokens.
// Timestamps are datetimes ("2023-11-16 18:15:46.6805900", or "2024-05-10 00:00:00.009930+00:00"
// in the 2024 week-long traces); arrivals are offsets from the first.
// The trace carries no content or session data, so every request's prompt is content of its
// own (no prefix sharing between requests).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "models/trace_common.h"

namespace fleetsim {

Trace read_azure_trace(const std::string& path, const TraceReadOptions& options = {});

// "YYYY-MM-DD HH:MM:SS[.fraction]" (or with 'T'), optionally with a zone ("Z", "+HH",
// "+HHMM", "+HH:MM" or "-..."), as nanoseconds since 1970-01-01 UTC; without a zone the time is
// read as UTC (only offsets matter). Throws TraceLineError("TIMESTAMP", ...) otherwise.
std::int64_t parse_datetime_ns(std::string_view text);

}  // namespace fleetsim
