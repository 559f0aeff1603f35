//! A Docker berth's file actions against the real engine, with the decision
//! bypassed: links the agent makes inside the container (to `/etc/shadow`,
//! to `/`, to a host directory, climbing out with `..`) are refused on the
//! host with the link named and nothing read or written; a container path
//! into `/work` is followed there; what berth creates belongs to the
//! container's uid; the forge's objects are read-only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use berth_sandbox::docker::DockerBerth;
use berth_sandbox::{ExecRequest, ExitStatus, FileActionError, FileContent, Sandbox, SandboxError};
use common::{Layout, text};

async fn ok(berth: &DockerBerth, line: &str) -> String {
    let mut r = ExecRequest::shell(line);
    r.timeout = Duration::from_secs(60);
    let out = berth.exec(r, None).await.unwrap();
    assert_eq!(
        out.status,
        ExitStatus::Exited(0),
        "{line}: {}",
        text(&out.stderr.bytes)
    );
    text(&out.stdout.bytes)
}

fn escape<T: std::fmt::Debug>(r: Result<T, SandboxError>, link: &str) -> String {
    match r {
        Err(SandboxError::File(e @ FileActionError::Escape { .. })) => {
            let m = e.to_string();
            assert!(m.contains(link) && m.contains("nothing was"), "{m}");
            m
        }
        other => panic!("expected an escape refusal naming {link}, got {other:?}"),
    }
}

#[tokio::test]
async fn links_made_in_the_container_never_lead_berth_to_the_host() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("files");
    let spec = layout.spec("dev-1");
    let worktree = spec.worktree.clone();
    let objects = spec.forge_objects.clone();
    let berth = backend.up(spec).await.unwrap();
    let hostside = layout.root().join("hostside");
    std::fs::create_dir_all(&hostside).unwrap();
    ok(
        &berth,
        &format!(
            "ln -s /etc/shadow shadow && ln -s / rootfs && ln -s {} out && \
             ln -s ../../../../../../../../../etc up && mkdir sub && ln -s /work/sub inner && echo ok",
            hostside.display()
        ),
    )
    .await;

    escape(
        berth.read_file("/work/shadow").await,
        "/work/shadow -> /etc/shadow",
    );
    escape(berth.read_file("/work/rootfs").await, "/work/rootfs -> /");
    escape(
        berth.read_file("/work/rootfs/etc/hostname").await,
        "/work/rootfs -> /",
    );
    escape(berth.read_file("/work/up/passwd").await, "/work/up -> ../");
    escape(
        berth.write_file("/work/out/planted", b"x".to_vec()).await,
        "/work/out -> ",
    );
    escape(
        berth
            .write_file("/work/rootfs/tmp/planted", b"x".to_vec())
            .await,
        "/work/rootfs -> /",
    );
    assert_eq!(std::fs::read_dir(&hostside).unwrap().count(), 0);
    assert!(!std::path::Path::new("/tmp/planted").exists());

    // A container path into /work is followed there.
    let w = berth
        .write_file("/work/inner/x.txt", b"via inner\n".to_vec())
        .await
        .unwrap();
    assert_eq!(w.host_path, worktree.join("sub/x.txt"));
    assert_eq!(ok(&berth, "cat /work/sub/x.txt").await, "via inner\n");
    // What berth creates belongs to the container's uid, parents included.
    berth
        .write_file("/work/new/deep/f.txt", b"f".to_vec())
        .await
        .unwrap();
    for p in ["sub/x.txt", "new", "new/deep", "new/deep/f.txt"] {
        assert_eq!(
            std::fs::metadata(worktree.join(p)).unwrap().uid(),
            1000,
            "{p}"
        );
    }
    let listing = berth.read_file("/work").await.unwrap();
    let FileContent::Listing(names) = listing.content else {
        panic!()
    };
    assert!(
        names.contains("inner@\n") && names.contains("new/\n"),
        "{names}"
    );
    // The forge's objects are read-only; the container's own files are not
    // on this host.
    let e = berth
        .write_file(&format!("{}/planted", objects.display()), b"x".to_vec())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(!objects.join("planted").exists());
    let e = berth.read_file("/etc/passwd").await.unwrap_err();
    assert!(e.to_string().contains("container's own filesystem"), "{e}");
    backend.down(&layout.project, "dev-1").await.unwrap();
}
