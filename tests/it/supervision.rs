//! A region's actors are children of its supervisor: one that dies and is
//! not brought back makes the region unready, by name, instead of serving
//! on without it.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;

use crate::common::Home;

async fn readyz(home: &Home) -> crate::common::Answer {
    home.send(Request::get("/readyz").body(Body::empty()).unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_actor_makes_the_region_unready_and_names_it() {
    let home = Home::start().await;
    let ready = readyz(&home).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.body["failed_actors"], serde_json::json!({}));

    home.state.indexer.kill();
    let mut answer = readyz(&home).await;
    for _ in 0..200 {
        if answer.status == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        answer = readyz(&home).await;
    }
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.body["ready"], false);
    let reason = answer.body["failed_actors"]["indexer"].as_str().expect("the indexer is named");
    assert!(reason.contains("cannot be restarted"), "{reason}");
    home.state.stop_actors().await;
}
