//! The route table. The router is built only through [`Table`], which
//! records each (method, path) it registers, so the OpenAPI check compares
//! the document with exactly what is routed rather than with a second list.

use axum::Router;
use axum::handler::Handler;
use axum::routing::{MethodFilter, on};

use crate::AppState;
use crate::api::{
    action_stream, actions, agents, events, pages, pr_automation, pr_review, projects, prompts,
    prs, tasks,
};
use crate::page;

/// One registered route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    /// Lowercase, as OpenAPI spells it.
    pub method: &'static str,
    pub path: &'static str,
}

struct Table {
    router: Router<AppState>,
    routes: Vec<Route>,
}

impl Table {
    fn add<H, T>(
        mut self,
        filter: MethodFilter,
        method: &'static str,
        path: &'static str,
        handler: H,
    ) -> Table
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, on(filter, handler));
        self.routes.push(Route { method, path });
        self
    }

    fn get<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Table {
        self.add(MethodFilter::GET, "get", path, h)
    }

    fn post<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Table {
        self.add(MethodFilter::POST, "post", path, h)
    }

    fn put<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Table {
        self.add(MethodFilter::PUT, "put", path, h)
    }
}

/// The routes (without state or middleware), and what they are.
pub(crate) fn table() -> (Router<AppState>, Vec<Route>) {
    let t = Table {
        router: Router::new(),
        routes: Vec::new(),
    }
    // The page.
    .get("/", page::approvals)
    .get("/tasks/{id}", page::task_page)
    .get("/login", page::login)
    .get("/assets/app.js", page::app_js)
    .get("/assets/app.css", page::app_css)
    .get("/openapi.json", crate::openapi::serve)
    // The pages' content (the shells above hold none).
    .get("/api/pages/approvals", pages::approvals)
    .get("/api/pages/tasks/{id}", pages::task)
    .get("/api/pages/actions/{id}/diff", pages::action_diff)
    // Projects.
    .get("/api/projects", projects::list)
    .post("/api/projects", projects::add)
    .get("/api/projects/{name}", projects::show)
    .get(
        "/api/projects/{name}/prompts/ci-auto-fix",
        pr_automation::auto_fix_prompt,
    )
    .put(
        "/api/projects/{name}/prompts/ci-auto-fix",
        pr_automation::set_auto_fix_prompt,
    )
    .get("/api/projects/{name}/network", projects::network)
    .post(
        "/api/projects/{name}/network/hosts",
        projects::add_network_host,
    )
    .post(
        "/api/projects/{name}/network/hosts/remove",
        projects::remove_network_host,
    )
    // Agents and their berths.
    .get("/api/agents", agents::list)
    .post("/api/agents", agents::activate)
    .get("/api/agents/{name}", agents::show)
    .post("/api/agents/{name}/up", agents::up)
    .post("/api/agents/{name}/down", agents::down)
    .put("/api/agents/{name}/auto-mode", agents::auto_mode)
    .get("/api/agents/{name}/autonomy", agents::autonomy)
    .put(
        "/api/agents/{name}/autonomy/{action_type}",
        agents::set_autonomy,
    )
    .post("/api/agents/{name}/run", agents::run)
    .post("/api/agents/{name}/claim", tasks::claim)
    .get("/api/berths", agents::berths)
    // Sessions and the prompt queue.
    .post("/api/agents/{name}/prompts", prompts::send)
    .get("/api/agents/{name}/sessions", prompts::agent_sessions)
    .get("/api/agents/{name}/queue", prompts::agent_queue)
    .get("/api/sessions", prompts::sessions)
    .get("/api/queue", prompts::queue)
    // Tasks.
    .get("/api/tasks", tasks::list)
    .post("/api/tasks", tasks::create)
    .get("/api/tasks/{id}", tasks::show)
    .post("/api/tasks/{id}/run", tasks::run)
    .post("/api/tasks/{id}/approve", tasks::approve)
    .post("/api/tasks/{id}/reject", tasks::reject)
    .put("/api/tasks/{id}/mode", tasks::set_mode)
    .put("/api/projects/{name}/mode", tasks::set_project_mode)
    .post("/api/agents/{name}/resume", tasks::resume_agent)
    .get("/api/choices", tasks::choices)
    .post("/api/choices/{id}/resolve", tasks::resolve_choice)
    // Actions.
    .post("/api/actions", actions::propose)
    .post("/api/actions/stream", action_stream::propose_streaming)
    .get("/api/actions", actions::list)
    .get("/api/actions/{id}", actions::show)
    .post("/api/actions/{id}/approve", actions::approve)
    .post("/api/actions/{id}/deny", actions::deny)
    .post("/api/actions/{id}/retry", actions::retry)
    .post("/api/actions/{id}/cancel", actions::cancel)
    // The log.
    .get("/api/events", events::list)
    .get("/api/events/stream", events::stream)
    .get("/api/metrics", events::metrics)
    .post("/api/outbox/drain", events::drain_outbox)
    // Pull requests.
    .get("/api/prs", prs::list)
    .get("/api/prs/{id}", prs::show)
    .get("/api/prs/{id}/checks", prs::checks)
    .post("/api/prs/{id}/checks/run", prs::run_checks)
    .post("/api/prs/{id}/merge", prs::merge)
    .post("/api/prs/{id}/close", prs::close)
    .get("/api/prs/{id}/threads", pr_review::threads)
    .post("/api/prs/{id}/comments", pr_review::comment)
    .post("/api/prs/{id}/threads/{thread}/resolve", pr_review::resolve)
    .post("/api/prs/{id}/reviews", pr_review::review)
    .post("/api/prs/{id}/review-requests", pr_review::request_review)
    .get("/api/prs/{id}/automation", pr_automation::show)
    .put("/api/prs/{id}/automation", pr_automation::set);
    (t.router, t.routes)
}
