// Package kindimage builds a kind node image on this machine, with no
// container registry: the same layout as kind's own node images
// (kindest/base + 'kind build node-image'), from parts this machine can
// reach.
//
//   - The base is Debian, installed with debootstrap from the distribution's
//     archive (in place of kindest/base), with kind's own entrypoint, units
//     and containerd configuration (kindbase/, copied from the kind module).
//   - Every binary comes from the Go module proxy at the pins under tools/
//     (tools/kindnode/build.sh): kubelet, kubeadm, kubectl and the control
//     plane at tools/controlplane/kube's Kubernetes version (kube-apiserver
//     and kube-controller-manager are the embedded plane's own binaries);
//     etcd is the plane's too, where kubeadm asks for another version its
//     image is tagged for the binary (Config.EtcdVersion) and the image's
//     LabelEtcdImageTag tells harness/cluster to run it; containerd, runc, crictl and the CNI
//     plugins at the versions kind's base image builds; pause compiled from
//     Kubernetes' own pause.c.
//   - The control-plane images (apiserver, controller-manager, scheduler,
//     kube-proxy, etcd, pause) are written as image archives with
//     go-containerregistry and imported into the node's containerd, as kind's
//     builder does; their names are the ones 'kubeadm config images list'
//     prints, and each image's version is checked against its binary.
//     CoreDNS is left out with its kubeadm addon phase (SkippedAddons):
//     nothing in a run resolves a name.
//   - The CNI is the reference plugins kind's kindnet configures (ptp,
//     host-local, portmap), configured by a static conflist for the pod
//     subnet of a one-node cluster.
//
// kind's own builder (sigs.k8s.io/kind/pkg/build/nodeimage) is not used:
// it fetches every image that is not one of the four Kubernetes image
// archives (etcd, CoreDNS, pause, kindnetd, the storage provisioner) from
// its registry with 'ctr content fetch', which cannot work offline. This
// package follows its steps otherwise: run the base, copy the binaries in,
// start containerd, import the image archives, commit.
package kindimage
