#pragma once
// Attribution methods over attention maps and their gradients, one header each under
// study/attribution/. All take plain arrays in forward order ([batch, heads, seq_q, seq_k] per
// attention module, study/attribution/layer_maps.h), so they work on maps from any source.
#include "study/attribution/attention_flow.h"        // Abnar & Zuidema 2020, max flow
#include "study/attribution/chefer_relevance.h"      // Chefer et al. 2021, relevance rules
#include "study/attribution/head_importance.h"       // Michel et al. 2019, head-mask gradient
#include "study/attribution/integrated_gradients.h"  // Hao et al. 2021, integrated gradients over A
#include "study/attribution/rollout.h"               // Abnar & Zuidema 2020 rollout, gradient-weighted rollout
